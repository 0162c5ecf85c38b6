/**
 * The CDK app (`npx cdk synth`, `npx cdk deploy`; cdk.json runs the compiled lib/infra/app.js, so
 * `npm run build` first). Context (`-c key=value`): temporalAddress and temporalNamespace (required),
 * temporalAuth (api-key | mtls | none, default api-key), alertEmail, workerImage, minWorkers,
 * maxWorkers, apiTenantClaim. See docs/DEPLOY.md.
 */
import path from 'node:path';
import { App } from 'aws-cdk-lib';
import { StarryStack } from './stack';

const app = new App();
const ctx = (key: string): string | undefined => {
  const v = app.node.tryGetContext(key) as unknown;
  return v === undefined || v === '' ? undefined : String(v);
};
const required = (key: string, example: string): string => {
  const v = ctx(key);
  if (!v) throw new Error(`missing context ${key}: pass -c ${key}=${example} (see docs/DEPLOY.md)`);
  return v;
};
const auth = ctx('temporalAuth') ?? 'api-key';
if (!['api-key', 'mtls', 'none'].includes(auth)) throw new Error(`context temporalAuth must be api-key, mtls or none, got "${auth}"`);

new StarryStack(app, ctx('stackName') ?? 'OpenStarry', {
  temporalAddress: required('temporalAddress', 'my-ns.a1b2c.tmprl.cloud:7233'),
  temporalNamespace: required('temporalNamespace', 'my-ns.a1b2c'),
  temporalAuth: auth as 'api-key' | 'mtls' | 'none',
  ...(ctx('alertEmail') ? { alertEmail: ctx('alertEmail') } : {}),
  ...(ctx('workerImage') ? { workerImage: ctx('workerImage') } : {}),
  ...(ctx('minWorkers') ? { minWorkers: Number(ctx('minWorkers')) } : {}),
  ...(ctx('maxWorkers') ? { maxWorkers: Number(ctx('maxWorkers')) } : {}),
  ...(ctx('apiTenantClaim') ? { apiTenantClaim: ctx('apiTenantClaim') } : {}),
  projectRoot: path.join(__dirname, '..', '..'),
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
