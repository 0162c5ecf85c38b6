/**
 * Credentials a Lambda gets as Secrets Manager ARNs (`<NAME>_SECRET_ARN`, the function's environment
 * holds no secret value), resolved into the variables the rest of the code reads (`<NAME>`): the
 * Temporal API key or mTLS pair for `temporalEnv`, the API's JWT secret. Each is read once per container
 * by the caller that caches the result (api/lambda-app.ts, infra/backlog/handler.ts).
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/** The Temporal credentials `temporalEnv` reads, each of which may come as `<NAME>_SECRET_ARN`. */
export const TEMPORAL_SECRET_VARS = ['TEMPORAL_API_KEY', 'TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY'] as const;

/**
 * `env` with each `names[i]` set from the secret `<name>_SECRET_ARN` points to, when that is set (a
 * value already in `<name>` is kept when no ARN is given); `read` counts the secrets fetched.
 *
 * ```ts
 * const { env } = await resolveSecretArns(process.env, TEMPORAL_SECRET_VARS);
 * const connection = await connectClient(temporalEnv(env));
 * ```
 */
export async function resolveSecretArns(
  env: NodeJS.ProcessEnv,
  names: readonly string[],
  client?: SecretsManagerClient,
): Promise<{ env: NodeJS.ProcessEnv; read: number }> {
  const wanted = names.filter((n) => env[`${n}_SECRET_ARN`]);
  if (wanted.length === 0) return { env, read: 0 };
  const sm = client ?? new SecretsManagerClient({});
  const values = await Promise.all(
    wanted.map(async (name) => {
      const arn = env[`${name}_SECRET_ARN`] as string;
      const out = await sm.send(new GetSecretValueCommand({ SecretId: arn }));
      if (!out.SecretString) throw new Error(`secret ${arn} (${name}_SECRET_ARN) has no SecretString: set its value`);
      return [name, out.SecretString] as const;
    }),
  );
  return { env: { ...env, ...Object.fromEntries(values) }, read: wanted.length };
}
