/**
 * The local host of the HTTP API (`starry api`, and `starry dev` beside its worker): the app on
 * 127.0.0.1 with @hono/node-server, one Temporal connection for its lifetime.
 */
import { serve, type ServerType } from '@hono/node-server';
import { AgentClient } from '../client/agent-client';
import { connectClient, temporalEnv } from '../client/connection';
import { createApp } from './app';
import { authenticator } from './auth';
import { apiEnv, appLimits, authConfig } from './env';

export interface LocalApi {
  url: string;
  /** Stop listening and close the Temporal connection. */
  close(): Promise<void>;
}

/**
 * Serve the API on 127.0.0.1:`port` (0 picks a free one). Without `insecureDev`, auth must be configured
 * in the environment; with it, every caller is an admin, so it only ever listens on loopback.
 */
export async function serveApi(opts: {
  port: number;
  insecureDev?: boolean;
  env?: NodeJS.ProcessEnv;
}): Promise<LocalApi> {
  const env = apiEnv(opts.env);
  // Without tokens there is no tenant to read: a multi-tenant API never runs open.
  if (opts.insecureDev && env.STARRY_API_TENANT_CLAIM) {
    throw new Error(
      'STARRY_API_TENANT_CLAIM is set, but an API without authentication (--insecure-dev) has no token to read a tenant from: set STARRY_API_JWT_SECRET or STARRY_API_JWKS_URL, or unset STARRY_API_TENANT_CLAIM',
    );
  }
  const auth = opts.insecureDev ? undefined : authenticator(authConfig(env));
  const t = temporalEnv(opts.env);
  let connecting: Promise<AgentClient> | undefined;
  const agents = () =>
    (connecting ??= connectClient(t)
      .then((connection) => new AgentClient({ connection, namespace: t.namespace, taskQueue: env.STARRY_TASK_QUEUE }))
      .catch((err) => {
        connecting = undefined; // try again on the next request
        throw err;
      }));
  const app = createApp({ agents, auth, ...appLimits(env) });
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: opts.port, hostname: '127.0.0.1' }, () => resolve(s));
    s.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (connecting) await (await connecting.catch(() => undefined))?.client.connection.close();
    },
  };
}
