/**
 * What every route group of the API shares (api/app.ts mounts the groups): the endpoint shape — a route,
 * the role it needs and its handler —, the problem+json responses each route lists, and the path
 * parameters several groups take.
 */
import { z, type RouteConfig, type RouteHandler } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { AgentClient } from '../../client/agent-client';
import { AgentIdSchema } from '../../core/contract';
import { InvalidArgumentError } from '../../core/errors';
import { TASK_WORKFLOW_ID_PATTERN } from '../../core/tenant';
import type { Principal, Role } from '../auth';
import { TITLES } from '../problem';

/** The app's context: the caller, set by the authentication middleware before any route runs. */
export type Env = { Variables: { principal: Principal } };

/** Who calls, once their role allows the route, and a client that acts only within their tenant. */
export interface Caller {
  p: Principal;
  agents: AgentClient;
}

/**
 * One route of the API as it is written: its OpenAPI definition, the role it needs (the kill switch is in
 * every operator's hands; unlock and loosening limits are an admin's, core/limits.ts) and what it does for
 * an allowed caller, typed by the route (the params, query and body it validated, the responses it may give).
 */
export interface EndpointSpec<R extends RouteConfig> {
  /** Named in the 403 of a caller whose roles do not allow it: `limits needs the admin role`. */
  name: string;
  role: Role;
  route: R;
  handle(c: Parameters<RouteHandler<R, Env>>[0], caller: Caller): ReturnType<RouteHandler<R, Env>>;
}

/** An endpoint as the app mounts it, whatever its route: api/app.ts lists them. */
export interface Endpoint {
  name: string;
  role: Role;
  route: RouteConfig;
  handle(c: Context<Env>, caller: Caller): Response | Promise<Response>;
}

/**
 * An endpoint, its handler checked against its route where it is written.
 *
 * ```ts
 * export const status = endpoint({ name: 'status', role: 'viewer', route, handle: async (c, { agents }) => c.json(…, 200) });
 * ```
 */
export function endpoint<R extends RouteConfig>(spec: EndpointSpec<R>): Endpoint {
  // Hono validated the request against this very route before the handler runs: the context is the route's.
  return spec as unknown as Endpoint;
}

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    errors: z.array(z.string()).optional(),
  })
  .openapi('Problem');

/** A JSON response of `schema`. */
export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { 'application/json': { schema } },
  description,
});

/** The problem+json responses of these statuses. */
export const problems = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((s) => [
      s,
      { content: { 'application/problem+json': { schema: ProblemSchema } }, description: TITLES[s] ?? 'Error' },
    ]),
  );

/** What any route may answer: no or a bad token, a role that does not allow it, Temporal out of reach. */
export const common = [401, 403, 503];
export const secured = [{ bearer: [] }];

// Schemas from core are used as they are: zod 4 adds `.openapi()` only to schemas made after
// @hono/zod-openapi is loaded, and core's are made first wherever the client is imported first.
export const agentPath = z.object({ agentId: AgentIdSchema });

const WorkflowIdSchema = z
  .string()
  .regex(
    TASK_WORKFLOW_ID_PATTERN,
    "a task workflow id looks like agent-<agentId>-task-<n> (agent-<tenant>:<agentId>-task-<n> for a tenant's agent)",
  );

/** The path of a task's routes: its workflow id. */
export const taskPath = z.object({
  workflowId: WorkflowIdSchema.openapi({ param: { name: 'workflowId', in: 'path' }, example: 'agent-a1-task-1' }),
});

/** A body that may be absent (halt, unlock): `{}` when empty, checked against the schema otherwise. */
export async function optionalBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  const text = await c.req.text();
  if (!text.trim()) return schema.parse({});
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new HTTPException(400, { message: 'the request body is not valid JSON' });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new InvalidArgumentError('the request is invalid', {
      issues: parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`),
    });
  return parsed.data;
}
