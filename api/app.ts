/**
 * The HTTP API: one Hono app, served locally by `starry api` (api/serve.ts) and on AWS Lambda
 * (api/lambda.ts). Routes mirror the CLI one for one and call the same AgentClient; the request and
 * response schemas are the contract's (core/contract.ts), so `/openapi.json` is generated from the same
 * source the workflows validate with. Errors are RFC 9457 problem+json. Every route acts within the
 * caller's tenant (a client for it: `AgentClient.forTenant`), so another tenant's agent or task is a 404
 * like a missing one. Routes, roles, tenants and errors are documented in docs/API.md.
 *
 * Each group of routes is a module of api/routes/ (tasks, agents, approvals, events, budgets, and the
 * document and health check); this file wires them: the guards a request passes, the role check and the
 * tenant's client each route gets, and every error as problem+json.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { NoWorkerError, SearchAttributesMissingError, type AgentClient } from '../client/agent-client';
import { isRequestError } from '../core/errors';
import { AuthError, roleAllows, type Authenticator } from './auth';
import { devApiGuard } from './dev-guard';
import { messageOf, problem, TITLES, unreachable } from './problem';
import * as agents from './routes/agents';
import * as approvals from './routes/approvals';
import * as budgets from './routes/budgets';
import { mountDocs } from './routes/docs';
import type { StreamSettings } from './event-streams';
import { eventEndpoints } from './routes/events';
import type { Caller, Endpoint, Env } from './routes/kit';
import * as tasks from './routes/tasks';

/** What the app needs from its host (and its event streams' settings, api/event-streams.ts). */
export interface ApiOptions extends StreamSettings {
  /** The client, connected once by the host and reused. */
  agents: () => Promise<AgentClient>;
  /**
   * Verifies bearer tokens; `undefined` only for `starry api --insecure-dev` (the host checks it is on loopback):
   * then every request passes the dev API's guard (core/dev-api.ts) first.
   */
  auth: Authenticator | undefined;
  /** Largest request body in bytes (default 1 MiB). */
  bodyLimitBytes?: number;
}

/**
 * Build the app.
 *
 * ```ts
 * const app = createApp({ agents: async () => client, auth: hs256Authenticator({ secret }) });
 * ```
 */
export function createApp(opts: ApiOptions): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({
    // Every invalid field, not only the first, in the problem's `errors`.
    defaultHook: (result, c) => {
      if (!result.success)
        return problem(
          c,
          400,
          'the request is invalid',
          result.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`),
        );
      return undefined;
    },
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
  });
  useGuards(app, opts);
  for (const e of endpoints(opts)) app.openapi(e.route, async (c) => e.handle(c, await allow(e, c, opts)));
  mountDocs(app, opts.agents);
  app.notFound((c) => problem(c, 404, `no route ${c.req.method} ${new URL(c.req.url).pathname}: see /openapi.json`));
  app.onError((err, c) => errorResponse(c, err));
  return app;
}

/**
 * Every route, in the order `/openapi.json` lists them (api/openapi.d.ts and the clients generated from the
 * document follow it), by group: api/routes/.
 */
function endpoints(opts: ApiOptions): Endpoint[] {
  const events = eventEndpoints(opts);
  return [
    tasks.submit,
    agents.status,
    agents.list,
    tasks.task,
    agents.message,
    agents.halt,
    agents.unlock,
    approvals.approvals,
    approvals.decide,
    events.taskEvents,
    events.agentEvents,
    agents.limits,
    budgets.budgets,
    budgets.budget,
    budgets.createBudget,
    budgets.raiseBudget,
  ];
}

/**
 * What every `/v1` request passes before its route: the dev API's guard when there is no authentication
 * (core/dev-api.ts: a web page is then the way in), the body limit, and the caller, from its token.
 */
function useGuards(app: OpenAPIHono<Env>, opts: ApiOptions): void {
  if (!opts.auth) app.use('*', devApiGuard);
  app.use(
    '/v1/*',
    bodyLimit({
      maxSize: opts.bodyLimitBytes ?? 1024 * 1024,
      onError: (c) => {
        // The rest of the body is never read: close the connection so a client's next request gets a fresh one.
        c.header('Connection', 'close');
        return problem(c, 413, `the request body is over ${opts.bodyLimitBytes ?? 1024 * 1024} bytes`);
      },
    }),
  );
  app.use('/v1/*', async (c, next) => {
    if (!opts.auth) {
      c.set('principal', { sub: 'insecure-dev', roles: ['admin'] });
      return next();
    }
    c.set('principal', await opts.auth.verify(c.req.header('authorization')));
    return next();
  });
}

/** The caller, once its role allows the route, and a client that acts only within its tenant. */
async function allow(e: Endpoint, c: Context<Env>, opts: ApiOptions): Promise<Caller> {
  const p = c.get('principal');
  if (!roleAllows(p.roles, e.role))
    throw new AuthError(
      403,
      `${e.name} needs the ${e.role} role; this token has ${p.roles.length ? p.roles.join(', ') : 'none'}`,
    );
  return { p, agents: (await opts.agents()).forTenant(p.tenant) };
}

/** Every error as problem+json, never a stack trace; Temporal out of reach is a 503 to retry. */
function errorResponse(c: Context, err: unknown): Response {
  if (err instanceof AuthError) {
    if (err.status === 401) c.header('WWW-Authenticate', 'Bearer');
    return problem(c, err.status, err.message);
  }
  if (isRequestError(err)) {
    const status = { InvalidArgument: 400, NotFound: 404, PermissionDenied: 403, Refused: 409 }[err.type];
    return problem(c, status, err.message, err.issues.length ? [...err.issues] : undefined);
  }
  if (err instanceof HTTPException) return problem(c, err.status, err.message || TITLES[err.status] || 'error');
  if (err instanceof NoWorkerError) {
    c.header('Retry-After', String(err.retryAfterSeconds));
    return problem(c, 503, err.message);
  }
  // The namespace lacks our search attributes: no retry helps until an operator registers them.
  if (err instanceof SearchAttributesMissingError) return problem(c, 503, err.message);
  if (unreachable(err)) {
    c.header('Retry-After', '5');
    return problem(c, 503, `Temporal cannot be reached: ${messageOf(err)}`);
  }
  console.error('[api] unexpected error', err);
  return problem(c, 500, 'an unexpected error; the server log has the details');
}
