/**
 * Credentials a Lambda gets as Secrets Manager ARNs (e.g. `TEMPORAL_API_KEY_SECRET_ARN`: the function's
 * environment holds no secret value), resolved into the variables the rest of the code reads: the
 * Temporal API key or mTLS pair for `temporalEnv`, the API's JWT secret. Each is read once per container
 * by the caller that caches the result (api/lambda-app.ts, infra/backlog/handler.ts).
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/** The Temporal credentials `temporalEnv` reads, each with the variable that may hold its secret's ARN instead. */
export const TEMPORAL_SECRET_ARNS: Readonly<Record<string, string>> = {
  TEMPORAL_API_KEY: 'TEMPORAL_API_KEY_SECRET_ARN',
  TEMPORAL_TLS_CERT: 'TEMPORAL_TLS_CERT_SECRET_ARN',
  TEMPORAL_TLS_KEY: 'TEMPORAL_TLS_KEY_SECRET_ARN',
};

/**
 * `env` with each variable of `arns` (variable → the variable holding its secret's ARN) set from that
 * secret when the ARN is given (otherwise a value already in `env` is kept); `read` counts the secrets
 * fetched.
 *
 * ```ts
 * const { env } = await resolveSecretArns(process.env, TEMPORAL_SECRET_ARNS);
 * const connection = await connectClient(temporalEnv(env));
 * ```
 */
export async function resolveSecretArns(
  env: NodeJS.ProcessEnv,
  arns: Readonly<Record<string, string>>,
  client?: SecretsManagerClient,
): Promise<{ env: NodeJS.ProcessEnv; read: number }> {
  const wanted = Object.entries(arns).filter(([, arnVar]) => env[arnVar]);
  if (wanted.length === 0) return { env, read: 0 };
  const sm = client ?? new SecretsManagerClient({});
  const values = await Promise.all(
    wanted.map(async ([name, arnVar]) => {
      const arn = env[arnVar] as string;
      const out = await sm.send(new GetSecretValueCommand({ SecretId: arn }));
      if (!out.SecretString) throw new Error(`secret ${arn} (${arnVar}) has no SecretString: set its value`);
      return [name, out.SecretString] as const;
    }),
  );
  return { env: { ...env, ...Object.fromEntries(values) }, read: wanted.length };
}
