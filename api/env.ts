/**
 * The API's environment, read once with zod: how it reaches Temporal and how it checks tokens. On
 * Lambda, secrets come as Secrets Manager ARNs (`*_SECRET_ARN`) that the handler resolves once per
 * container (api/lambda.ts); locally they are plain variables. docs/API.md lists them.
 */
import { z } from 'zod';
import { streamCaps } from '../core/stream-caps';
import type { AuthConfig } from './auth';

export const ApiEnvSchema = z.object({
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_API_KEY: z.string().optional(),
  TEMPORAL_API_KEY_SECRET_ARN: z.string().startsWith('arn:').optional(),
  STARRY_TASK_QUEUE: z.string().default('openstarry'),
  STARRY_API_JWT_SECRET: z.string().optional(),
  STARRY_API_JWT_SECRET_ARN: z.string().startsWith('arn:').optional(),
  STARRY_API_JWKS_URL: z.url().optional(),
  STARRY_API_ISSUER: z.string().optional(),
  STARRY_API_AUDIENCE: z.string().optional(),
  /** The token claim naming the caller's tenant (docs/API.md#tenants); unset: one tenant. */
  STARRY_API_TENANT_CLAIM: z.string().min(1).max(200).optional(),
  STARRY_API_BODY_LIMIT: z.coerce.number().int().positive().optional(),
  /** Event streams one API process serves at once (default 100); one more is a 503 with Retry-After. */
  STARRY_API_MAX_STREAMS: z.coerce.number().int().positive().max(100_000).optional(),
  /** Of those, what one tenant holds at once (default half of STARRY_API_MAX_STREAMS); one more is a 429. */
  STARRY_API_MAX_STREAMS_PER_TENANT: z.coerce.number().int().positive().max(100_000).optional(),
  /** Of those, what one client (a token's `sub`) holds at once (default 10); one more is a 429. */
  STARRY_API_MAX_STREAMS_PER_CLIENT: z.coerce.number().int().positive().max(100_000).optional(),
});
export type ApiEnv = z.infer<typeof ApiEnvSchema>;

/** The variable names, e.g. for a deployment to list what it must set. */
export const API_ENV_NAMES = Object.keys(ApiEnvSchema.shape) as (keyof ApiEnv)[];

/** Parse the environment; a bad value is a clear error naming the variable. */
export function apiEnv(env: NodeJS.ProcessEnv = process.env): ApiEnv {
  const parsed = ApiEnvSchema.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid API environment: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

/**
 * How tokens are checked, from the environment; `secret` is the JWT secret as resolved (on Lambda, read
 * from its ARN).
 *
 * ```ts
 * const auth = authenticator(authConfig(apiEnv()));
 * ```
 */
export function authConfig(env: ApiEnv, secret = env.STARRY_API_JWT_SECRET): AuthConfig {
  return {
    ...(secret ? { secret } : {}),
    ...(env.STARRY_API_JWKS_URL ? { jwksUrl: env.STARRY_API_JWKS_URL } : {}),
    ...(env.STARRY_API_ISSUER ? { issuer: env.STARRY_API_ISSUER } : {}),
    ...(env.STARRY_API_AUDIENCE ? { audience: env.STARRY_API_AUDIENCE } : {}),
    ...(env.STARRY_API_TENANT_CLAIM ? { tenantClaim: env.STARRY_API_TENANT_CLAIM } : {}),
  };
}

/**
 * The app's limits from the environment (what `createApp` takes beside its client and auth).
 * @throws Error naming the variables when the stream caps do not nest (a client's share over its tenant's, a
 *   tenant's over the process's).
 */
export function appLimits(env: ApiEnv): {
  bodyLimitBytes?: number;
  maxStreams?: number;
  maxStreamsPerTenant?: number;
  maxStreamsPerClient?: number;
} {
  const limits = {
    ...(env.STARRY_API_BODY_LIMIT ? { bodyLimitBytes: env.STARRY_API_BODY_LIMIT } : {}),
    ...(env.STARRY_API_MAX_STREAMS ? { maxStreams: env.STARRY_API_MAX_STREAMS } : {}),
    ...(env.STARRY_API_MAX_STREAMS_PER_TENANT ? { maxStreamsPerTenant: env.STARRY_API_MAX_STREAMS_PER_TENANT } : {}),
    ...(env.STARRY_API_MAX_STREAMS_PER_CLIENT ? { maxStreamsPerClient: env.STARRY_API_MAX_STREAMS_PER_CLIENT } : {}),
  };
  try {
    streamCaps(limits);
  } catch (err) {
    throw new Error(`invalid API environment: ${(err as Error).message}`);
  }
  return limits;
}
