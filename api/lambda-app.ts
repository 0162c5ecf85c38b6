/**
 * The app one Lambda container serves, whichever entry it runs (api/lambda.ts behind API Gateway,
 * api/lambda-stream.ts behind a function URL): the secrets (Temporal API key, JWT secret, given as
 * Secrets Manager ARNs) are read and the Temporal connection opened once per container, then reused by
 * every invocation it serves.
 */
import { AgentClient } from '../client/agent-client';
import { connectClient, temporalEnv } from '../client/connection';
import { resolveSecretArns, TEMPORAL_SECRET_ARNS } from '../client/secret-env';
import { createApp } from './app';
import { authenticator } from './auth';
import { apiEnv, appLimits, authConfig } from './env';

let ready: Promise<{ app: ReturnType<typeof createApp> }> | undefined;
let connections = 0;
let secretsRead = 0;

/** Build the app once per container: secrets resolved, the client connected lazily and then reused. */
async function build(env: NodeJS.ProcessEnv): Promise<{ app: ReturnType<typeof createApp> }> {
  const e = apiEnv(env);
  const resolved = await resolveSecretArns(env, {
    ...TEMPORAL_SECRET_ARNS,
    STARRY_API_JWT_SECRET: 'STARRY_API_JWT_SECRET_ARN',
  });
  secretsRead += resolved.read;
  const jwtSecret = resolved.env.STARRY_API_JWT_SECRET;
  const auth = authenticator(authConfig(e, jwtSecret));
  const t = temporalEnv(resolved.env);
  let client: Promise<AgentClient> | undefined;
  const agents = () =>
    (client ??= connectClient(t)
      .then((connection) => {
        connections++;
        return new AgentClient({ connection, namespace: t.namespace, taskQueue: e.STARRY_TASK_QUEUE });
      })
      .catch((err) => {
        client = undefined;
        throw err;
      }));
  return {
    app: createApp({ agents, auth, ...appLimits(e) }),
  };
}

/**
 * The container's app, built on the first call (a failed build is retried by the next invocation).
 *
 * ```ts
 * const app = await containerApp();
 * return handle(app)(event, context);
 * ```
 */
export async function containerApp(env: NodeJS.ProcessEnv = process.env): Promise<ReturnType<typeof createApp>> {
  ready ??= build(env).catch((err) => {
    ready = undefined;
    throw err;
  });
  return (await ready).app;
}

/** Secrets this container read from Secrets Manager (each once, however many invocations). */
export function secretsReadCount(): number {
  return secretsRead;
}

/** Temporal connections this container opened (one, however many invocations): for tests and the benchmark. */
export function connectionsOpened(): number {
  return connections;
}
