/**
 * The CDK app (`npx cdk synth`, `npx cdk deploy`; cdk.json runs the compiled lib/infra/app.js, so
 * `npm run build` first). Context (`-c key=value`): temporalAddress and temporalNamespace (required),
 * temporalAuth (api-key | mtls | none, default api-key), alertEmail, workerImage, workerBuildId,
 * drainingWorkers (JSON: `[{"buildId":"…","image":"…"}]`), minWorkers, maxWorkers, apiTenantClaim,
 * observability (true | false, default true), collectorImage, bedrockModels (`id1,id2`: the Bedrock
 * models the workers may call), toolCompute (fargate | ec2, default fargate: where the tool workers run),
 * minToolWorkers, maxToolWorkers, toolInstanceType (ec2 only, default t3.medium).
 * See docs/DEPLOY.md.
 */
import path from 'node:path';
import { App } from 'aws-cdk-lib';
import { parseLlmSpec } from '../core/llm-spec';
import { StarryStack, type WorkerVersion } from './stack';

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
if (!['api-key', 'mtls', 'none'].includes(auth))
  throw new Error(`context temporalAuth must be api-key, mtls or none, got "${auth}"`);

/** A true/false switch (`-c observability=false`); unset: undefined. */
function flag(key: string): boolean | undefined {
  const v = ctx(key);
  if (v === undefined) return undefined;
  if (v !== 'true' && v !== 'false') throw new Error(`context ${key} must be true or false, got "${v}"`);
  return v === 'true';
}

const toolCompute = ctx('toolCompute') ?? 'fargate';
if (toolCompute !== 'fargate' && toolCompute !== 'ec2')
  throw new Error(
    `context toolCompute must be fargate or ec2, got "${toolCompute}" (ec2 runs shell.run: see docs/DEPLOY.md#tool-workers)`,
  );

/** A whole number of tasks (`-c maxWorkers=4`); unset: undefined. */
function workers(key: string): number | undefined {
  const v = ctx(key);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`context ${key} must be a whole number of tasks, got "${v}"`);
  return n;
}

/** The versions still draining (docs/DEPLOY.md#rolling-workers), checked: a typo would remove a service. */
function drainingWorkers(): WorkerVersion[] | undefined {
  const raw = app.node.tryGetContext('drainingWorkers') as unknown;
  if (raw === undefined || raw === '') return undefined;
  let list: unknown;
  try {
    list = typeof raw === 'string' ? JSON.parse(raw) : raw;
  } catch (err) {
    throw new Error(
      `context drainingWorkers must be JSON, e.g. '[{"buildId":"0.1.0-3f9a0c1b2d4e","image":"repo/openstarry:1"}]': ${(err as Error).message}`,
    );
  }
  const valid = (v: unknown): v is WorkerVersion =>
    typeof v === 'object' &&
    v !== null &&
    typeof (v as WorkerVersion).buildId === 'string' &&
    typeof (v as WorkerVersion).image === 'string';
  if (!Array.isArray(list) || !list.every(valid))
    throw new Error(
      'context drainingWorkers must be a list of {"buildId": "…", "image": "…"} (the WorkerBuildId output and the image of each version still draining)',
    );
  return list;
}

/** The Bedrock models the workers may call (`-c bedrockModels=id1,id2`), each checked as `--llm bedrock:ID` is. */
function bedrockModels(): string[] | undefined {
  const ids = ctx('bedrockModels')
    ?.split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  if (!ids?.length) return undefined;
  for (const id of ids) {
    try {
      parseLlmSpec(`bedrock:${id}`);
    } catch (err) {
      throw new Error(`context bedrockModels: "${id}" is not a Bedrock model id (${(err as Error).message})`);
    }
  }
  return ids;
}

new StarryStack(app, ctx('stackName') ?? 'OpenStarry', {
  temporalAddress: required('temporalAddress', 'my-ns.a1b2c.tmprl.cloud:7233'),
  temporalNamespace: required('temporalNamespace', 'my-ns.a1b2c'),
  temporalAuth: auth as 'api-key' | 'mtls' | 'none',
  ...(ctx('alertEmail') ? { alertEmail: ctx('alertEmail') } : {}),
  ...(ctx('workerImage') ? { workerImage: ctx('workerImage') } : {}),
  ...(ctx('workerBuildId') ? { workerBuildId: ctx('workerBuildId') } : {}),
  ...(drainingWorkers() ? { drainingWorkers: drainingWorkers() } : {}),
  ...(ctx('minWorkers') ? { minWorkers: workers('minWorkers') } : {}),
  ...(ctx('maxWorkers') ? { maxWorkers: workers('maxWorkers') } : {}),
  toolCompute,
  ...(ctx('minToolWorkers') ? { minToolWorkers: workers('minToolWorkers') } : {}),
  ...(ctx('maxToolWorkers') ? { maxToolWorkers: workers('maxToolWorkers') } : {}),
  ...(ctx('toolInstanceType') ? { toolInstanceType: ctx('toolInstanceType') } : {}),
  ...(ctx('apiTenantClaim') ? { apiTenantClaim: ctx('apiTenantClaim') } : {}),
  ...(flag('observability') === false ? { observability: false } : {}),
  ...(ctx('collectorImage') ? { collectorImage: ctx('collectorImage') } : {}),
  ...(bedrockModels() ? { bedrockModels: bedrockModels() } : {}),
  projectRoot: path.join(__dirname, '..', '..'),
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
