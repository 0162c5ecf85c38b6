/**
 * The HTTP API: one Hono app, served locally by `starry api` (api/serve.ts) and on AWS Lambda
 * (api/lambda.ts). Routes mirror the CLI one for one and call the same AgentClient; the request and
 * response schemas are the contract's (core/contract.ts), so `/openapi.json` is generated from the same
 * source the workflows validate with. Errors are RFC 9457 problem+json. Every route acts within the
 * caller's tenant (a client for it: `AgentClient.forTenant`), so another tenant's agent or task is a 404
 * like a missing one. Routes, roles, tenants and errors are documented in docs/API.md.
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { NoWorkerError, type AgentClient } from '../client/agent-client';
import { parseTaskConfig } from '../core/config';
import { budgetCreateSchema, budgetNameSchema, budgetRaiseSchema, budgetStatusSchema } from '../core/budget';
import {
  AgentIdSchema,
  AgentListSchema,
  AgentStateSchema,
  AgentStatusSchema,
  ApprovalDecisionSchema,
  ApprovalListSchema,
  DecisionInputSchema,
  HaltInputSchema,
  HumanMessageSchema,
  LimitsInputSchema,
  LimitsResultSchema,
  MessageResultSchema,
  StreamEventDataSchemas,
  SubmitTaskInputSchema,
  SubmitTaskResultSchema,
  TaskIdSchema,
  TaskResultSchema,
  UnlockInputSchema,
  UnlockResultSchema,
} from '../core/contract';
import { InvalidArgumentError, isRequestError, RefusedError } from '../core/errors';
import type { StreamHolder } from '../core/stream-caps';
import { traceparentSchema } from '../core/payloads';
import { TASK_WORKFLOW_ID_PATTERN } from '../core/tenant';
import { AuthError, roleAllows, type Authenticator, type Principal, type Role } from './auth';
import { devApiGuard } from './dev-guard';
import { EventStreams, nodeSocket } from './event-streams';
import { messageOf, problem, TITLES, unreachable } from './problem';

/** What the app needs from its host. */
export interface ApiOptions {
  /** The client, connected once by the host and reused. */
  agents: () => Promise<AgentClient>;
  /**
   * Verifies bearer tokens; `undefined` only for `starry api --insecure-dev` (the host checks it is on loopback):
   * then every request passes the dev API's guard (core/dev-api.ts) first.
   */
  auth: Authenticator | undefined;
  /** Largest request body in bytes (default 1 MiB). */
  bodyLimitBytes?: number;
  /** Event streams this process serves at once (default 100); one more is a 503 with `Retry-After`. */
  maxStreams?: number;
  /** Event streams one tenant holds at once (default: half of `maxStreams`); one more is a 429. Only with tenants. */
  maxStreamsPerTenant?: number;
  /** Event streams one client (a token's `sub`; without auth, an address) holds at once (default 10); one more is a 429. */
  maxStreamsPerClient?: number;
  /** A comment line every this many ms keeps proxies from closing an idle stream (default 15 s). */
  keepAliveMs?: number;
  /** A client that takes none of what waits for it for this long is dropped (default 30 s): nothing buffers for it. */
  slowClientMs?: number;
  /**
   * A stream ends, with a retryable `error`, after this long (default: never; on Lambda, 5 s before the
   * invocation's time runs out), so its client resumes with `Last-Event-ID` rather than being cut.
   */
  maxStreamMs?: number;
}

type Env = { Variables: { principal: Principal } };

const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    errors: z.array(z.string()).optional(),
  })
  .openapi('Problem');

const WorkflowIdSchema = z
  .string()
  .regex(
    TASK_WORKFLOW_ID_PATTERN,
    "a task workflow id looks like agent-<agentId>-task-<n> (agent-<tenant>:<agentId>-task-<n> for a tenant's agent)",
  );

// Schemas from core are used as they are: zod 4 adds `.openapi()` only to schemas made after
// @hono/zod-openapi is loaded, and core's are made first wherever the client is imported first.
const agentPath = z.object({ agentId: AgentIdSchema });

const SubmitBodySchema = z
  .object({
    goal: SubmitTaskInputSchema.shape.goal,
    priority: SubmitTaskInputSchema.shape.priority,
    taskId: TaskIdSchema.optional(),
    /**
     * The agent config (all fields optional); only needed to create an agent or to override its config.
     * Its `safety` limits may only tighten an existing agent's (a looser one is 403); the limits it leaves
     * out are the agent's.
     */
    config: z.record(z.string(), z.unknown()).optional(),
    /** The `--llm` spec, e.g. `gemini:gemini-2.5-flash`; needed to create an agent unless config.llm has it. */
    llm: z.string().max(2048).optional(),
  })
  .strict()
  .openapi('SubmitTask');

const HaltBodySchema = z.object({ reason: HaltInputSchema.shape.note }).strict().openapi('Halt');
const UnlockBodySchema = z
  .object({
    resume: UnlockInputSchema.shape.resume,
    addTokens: UnlockInputSchema.shape.addTokens,
    note: UnlockInputSchema.shape.note,
  })
  .strict()
  .openapi('Unlock');
const DecisionBodySchema = z
  .object({
    decision: DecisionInputSchema.shape.decision,
    reason: DecisionInputSchema.shape.reason,
    note: DecisionInputSchema.shape.note,
    args: DecisionInputSchema.shape.args,
  })
  .strict()
  .openapi('Decision');
const LimitsBodySchema = z
  .object({
    safety: LimitsInputSchema.shape.safety,
    approval: LimitsInputSchema.shape.approval,
    note: LimitsInputSchema.shape.note,
  })
  .strict()
  .openapi('Limits');
const budgetPath = z.object({ name: budgetNameSchema() });
const BudgetCreateBodySchema = budgetCreateSchema().omit({ by: true });
const BudgetRaiseBodySchema = budgetRaiseSchema().omit({ by: true });
const MessageBodySchema = z.object({ text: HumanMessageSchema.shape.text }).strict().openapi('Message');
const RunningSchema = z.object({ workflowId: z.string(), status: z.literal('RUNNING') }).openapi('TaskRunning');

/** One event of a live stream, as `event:`, `id:` and `data:` (JSON) lines (docs/API.md#live-events). */
const StreamEventSchema = z
  .discriminatedUnion(
    'event',
    Object.entries(StreamEventDataSchemas).map(([event, data]) =>
      z.object({ event: z.literal(event), id: z.string().optional(), data }),
    ) as unknown as [z.ZodObject, ...z.ZodObject[]],
  )
  .openapi('StreamEvent', {
    description:
      'A Server-Sent Event: `event:` its name, `id:` what `Last-Event-ID` resumes after (absent on `error`), `data:` this JSON',
  });
const streamRequest = {
  query: z.object({
    from: z.enum(['0', 'now']).optional().openapi({
      description:
        '`0` replays what is recorded first (a finished task: all its events); `now` (default) goes on from the present',
    }),
  }),
  headers: z.object({
    'last-event-id': z.string().max(200).optional().openapi({
      description:
        'Resume after this event (an `id` the stream sent): no gap, no duplicate. EventSource sends it on reconnect',
    }),
  }),
};
const streamResponse = (description: string) => ({
  200: { content: { 'text/event-stream': { schema: StreamEventSchema } }, description },
  ...problems(400, 404, 429, ...common),
});

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { 'application/json': { schema } },
  description,
});
const problems = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((s) => [
      s,
      { content: { 'application/problem+json': { schema: ProblemSchema } }, description: TITLES[s] ?? 'Error' },
    ]),
  );
const common = [401, 403, 503];
const secured = [{ bearer: [] }];

const routes = {
  submit: createRoute({
    method: 'post',
    path: '/v1/agents/{agentId}/tasks',
    summary: 'Submit a task (starts the agent when it does not exist)',
    security: secured,
    request: {
      params: agentPath,
      query: z.object({
        wait: z.coerce
          .number()
          .int()
          .min(0)
          .max(900)
          .optional()
          .openapi({ description: 'Seconds to wait for the result' }),
      }),
      // `Idempotency-Key`, named in lower case as Hono reads headers; checked by the client (IdempotencyKeySchema).
      headers: z.object({
        'idempotency-key': z.string().optional().openapi({
          description:
            'Makes the submit safe to retry: a submit sent again with the same key (1-255 visible ASCII characters) is answered as the first was and runs at most once',
        }),
        traceparent: z.string().optional().openapi({
          description:
            "The caller's W3C trace context: when the worker traces, the task's trace links to this span. A malformed one is ignored, as W3C Trace Context says",
        }),
      }),
      body: { content: { 'application/json': { schema: SubmitBodySchema } }, required: true },
    },
    responses: {
      200: json(TaskResultSchema, 'The task finished within `wait` seconds'),
      202: json(SubmitTaskResultSchema, 'Queued; `Location` is the task'),
      ...problems(400, 404, 409, 413, ...common),
    },
  }),
  status: createRoute({
    method: 'get',
    path: '/v1/agents/{agentId}',
    summary: "An agent's state query",
    security: secured,
    request: { params: agentPath },
    responses: { 200: json(AgentStatusSchema, "The agent's full status"), ...problems(400, 404, ...common) },
  }),
  list: createRoute({
    method: 'get',
    path: '/v1/agents',
    summary: "Running agents (the caller's tenant's), optionally in one state, from the visibility store",
    security: secured,
    request: {
      query: z.object({
        state: AgentStateSchema.optional(),
        pageSize: z.coerce.number().int().min(1).max(200).optional(),
        nextPageToken: z.string().max(4096).optional(),
      }),
    },
    responses: { 200: json(AgentListSchema, 'A page of agents'), ...problems(400, ...common) },
  }),
  task: createRoute({
    method: 'get',
    path: '/v1/tasks/{workflowId}',
    summary: "A task's result",
    security: secured,
    request: {
      params: z.object({
        workflowId: WorkflowIdSchema.openapi({ param: { name: 'workflowId', in: 'path' }, example: 'agent-a1-task-1' }),
      }),
    },
    responses: {
      200: json(TaskResultSchema, 'The task has ended'),
      202: json(RunningSchema, 'The task is still running'),
      ...problems(400, 404, ...common),
    },
  }),
  message: createRoute({
    method: 'post',
    path: '/v1/agents/{agentId}/messages',
    summary: 'A human message for the running task (kept for the next task when none runs)',
    security: secured,
    request: {
      params: agentPath,
      body: { content: { 'application/json': { schema: MessageBodySchema } }, required: true },
    },
    responses: { 200: json(MessageResultSchema, 'Where the message went'), ...problems(400, 404, 409, 413, ...common) },
  }),
  halt: createRoute({
    method: 'post',
    path: '/v1/agents/{agentId}/halt',
    summary: 'SYSTEM_HALT: stop the agent now, cancel the work in flight, clear its queue',
    security: secured,
    request: {
      params: agentPath,
      body: { content: { 'application/json': { schema: HaltBodySchema } }, required: false },
    },
    responses: {
      202: json(z.object({ halted: z.literal(true), agentId: z.string() }).openapi('Halted'), 'SYSTEM_HALT sent'),
      ...problems(400, 404, 413, ...common),
    },
  }),
  unlock: createRoute({
    method: 'post',
    path: '/v1/agents/{agentId}/unlock',
    summary: 'admin:unlock: leave SAFETY_LOCKOUT / ERROR_PAUSED / STOPPED',
    security: secured,
    request: {
      params: agentPath,
      body: { content: { 'application/json': { schema: UnlockBodySchema } }, required: false },
    },
    responses: { 200: json(UnlockResultSchema, 'Unlocked'), ...problems(400, 404, 409, 413, ...common) },
  }),
  approvals: createRoute({
    method: 'get',
    path: '/v1/approvals',
    summary: 'Tool calls that wait for a human decision (of one agent with ?agentId=, else of every waiting agent)',
    security: secured,
    request: { query: z.object({ agentId: AgentIdSchema.optional() }) },
    responses: { 200: json(ApprovalListSchema, 'The waiting calls, oldest first'), ...problems(400, 404, ...common) },
  }),
  decide: createRoute({
    method: 'post',
    path: '/v1/agents/{agentId}/approvals/{callId}',
    summary: 'Approve (optionally with edited args) or deny a tool call that waits for approval',
    security: secured,
    request: {
      params: agentPath.extend({ callId: DecisionInputSchema.shape.callId }),
      body: { content: { 'application/json': { schema: DecisionBodySchema } }, required: true },
    },
    responses: {
      200: json(ApprovalDecisionSchema, 'Decided: the call runs (approve) or is refused as pain (deny)'),
      ...problems(400, 404, 409, 413, ...common),
    },
  }),
  taskEvents: createRoute({
    method: 'get',
    path: '/v1/tasks/{workflowId}/events',
    summary: "A task's live events (Server-Sent Events), until it ends",
    security: secured,
    request: {
      params: z.object({
        workflowId: WorkflowIdSchema.openapi({ param: { name: 'workflowId', in: 'path' }, example: 'agent-a1-task-1' }),
      }),
      ...streamRequest,
    },
    responses: streamResponse(
      'Every tick, LLM answer, tool call, pain, alert, message, approval and state change; `end` last',
    ),
  }),
  agentEvents: createRoute({
    method: 'get',
    path: '/v1/agents/{agentId}/events',
    summary: "An agent's live events and those of every task it runs (Server-Sent Events), until the client leaves",
    security: secured,
    request: { params: agentPath, ...streamRequest },
    responses: streamResponse(
      "The agent's state changes, tasks, messages, approvals and alerts, and each task's events",
    ),
  }),
  limits: createRoute({
    method: 'patch',
    path: '/v1/agents/{agentId}/limits',
    summary:
      "admin:limits: change an agent's limits (its safety fields), raising or lowering them; recorded with who did it",
    security: secured,
    request: {
      params: agentPath,
      body: { content: { 'application/json': { schema: LimitsBodySchema } }, required: true },
    },
    responses: {
      200: json(LimitsResultSchema, "The agent's limits now; its next task runs with them"),
      ...problems(400, 404, 409, 413, ...common),
    },
  }),
  budgets: createRoute({
    method: 'get',
    path: '/v1/budgets',
    summary: "The shared budgets (the caller's tenant's), from the visibility store",
    security: secured,
    responses: {
      200: json(z.object({ budgets: z.array(budgetStatusSchema()) }), 'Every running budget, by name'),
      ...problems(...common),
    },
  }),
  budget: createRoute({
    method: 'get',
    path: '/v1/budgets/{name}',
    summary: "A shared budget's books: limit, spent, leased, available, its leases and its audit log",
    security: secured,
    request: { params: budgetPath },
    responses: { 200: json(budgetStatusSchema(), 'The budget'), ...problems(400, 404, ...common) },
  }),
  createBudget: createRoute({
    method: 'post',
    path: '/v1/budgets',
    summary: 'Create a shared budget that agents draw from (`budget` in their config); recorded with who did it',
    security: secured,
    request: { body: { content: { 'application/json': { schema: BudgetCreateBodySchema } }, required: true } },
    responses: {
      201: json(budgetStatusSchema(), 'Created; `Location` is the budget'),
      ...problems(400, 409, 413, ...common),
    },
  }),
  raiseBudget: createRoute({
    method: 'post',
    path: '/v1/budgets/{name}/raise',
    summary: "Raise a shared budget's limit by `tokens`; recorded with who did it",
    security: secured,
    request: {
      params: budgetPath,
      body: { content: { 'application/json': { schema: BudgetRaiseBodySchema } }, required: true },
    },
    responses: { 200: json(budgetStatusSchema(), 'The budget now'), ...problems(400, 404, 413, ...common) },
  }),
};

/**
 * The role each route needs: the kill switch is in every operator's hands; unlock and loosening limits
 * are an admin's (an operator's task may only tighten them, core/limits.ts).
 */
const ROLE: Record<keyof typeof routes, Role> = {
  submit: 'operator',
  status: 'viewer',
  list: 'viewer',
  task: 'viewer',
  message: 'operator',
  halt: 'operator',
  unlock: 'admin',
  approvals: 'viewer',
  decide: 'approver',
  limits: 'admin',
  budgets: 'viewer',
  budget: 'viewer',
  createBudget: 'admin',
  raiseBudget: 'admin',
  taskEvents: 'viewer',
  agentEvents: 'viewer',
};

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

  // Without authentication, a web page is the way in: see core/dev-api.ts.
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
  /** The caller, once its role allows the route, and a client that acts only within its tenant. */
  const allow = async (route: keyof typeof routes, c: Context<Env>) => {
    const p = c.get('principal');
    if (!roleAllows(p.roles, ROLE[route]))
      throw new AuthError(
        403,
        `${route} needs the ${ROLE[route]} role; this token has ${p.roles.length ? p.roles.join(', ') : 'none'}`,
      );
    return { p, agents: (await opts.agents()).forTenant(p.tenant) };
  };

  app.openapi(routes.submit, async (c) => {
    const { agents } = await allow('submit', c);
    const { agentId } = c.req.valid('param');
    const { wait } = c.req.valid('query');
    const { 'idempotency-key': key, traceparent } = c.req.valid('header');
    const body = c.req.valid('json');
    const task = {
      goal: body.goal,
      ...(body.priority !== undefined ? { priority: body.priority } : {}),
      ...(body.taskId ? { taskId: body.taskId } : {}),
      ...(key !== undefined ? { idempotencyKey: key } : {}),
      ...(traceparent && traceparentSchema().safeParse(traceparent).success ? { traceparent } : {}),
    };
    // Parsed here, once: a config or an LLM creates the agent if needed; without either, the task runs with the agent's
    // config.
    const submitted =
      body.config !== undefined || body.llm !== undefined
        ? await agents.submit(agentId, { ...task, config: parseTaskConfig(body.config ?? {}, body.llm, 'config') })
        : await agents.submitExisting(agentId, task);
    c.header('Location', `/v1/tasks/${submitted.workflowId}`);
    if (wait) {
      const result = await agents
        .waitForTask(agentId, submitted.taskId, { timeoutMs: wait * 1000 })
        .catch(() => undefined);
      if (result) return c.json(result, 200);
    }
    return c.json(submitted, 202);
  });

  app.openapi(routes.status, async (c) => {
    const { agents } = await allow('status', c);
    return c.json(await agents.status(c.req.valid('param').agentId), 200);
  });

  app.openapi(routes.list, async (c) => {
    const { agents } = await allow('list', c);
    return c.json(await agents.listAgents(c.req.valid('query')), 200);
  });

  app.openapi(routes.task, async (c) => {
    const { agents } = await allow('task', c);
    const { workflowId } = c.req.valid('param');
    const result = await agents.taskResult(workflowId);
    return result ? c.json(result, 200) : c.json({ workflowId, status: 'RUNNING' as const }, 202);
  });

  app.openapi(routes.message, async (c) => {
    const { p, agents } = await allow('message', c);
    return c.json(await agents.message(c.req.valid('param').agentId, c.req.valid('json').text, p.sub), 200);
  });

  app.openapi(routes.halt, async (c) => {
    const { p, agents } = await allow('halt', c);
    const { agentId } = c.req.valid('param');
    const body = await optionalBody(c, HaltBodySchema);
    await agents.halt(agentId, { by: p.sub, ...(body.reason ? { note: body.reason } : {}) });
    return c.json({ halted: true as const, agentId }, 202);
  });

  app.openapi(routes.unlock, async (c) => {
    const { p, agents } = await allow('unlock', c);
    const body = await optionalBody(c, UnlockBodySchema);
    const r = await agents.unlock(c.req.valid('param').agentId, { ...body, by: p.sub });
    // Unlocking an agent that is not locked is a conflict with its state: the agent's own message says so.
    if (!r.unlocked) throw new RefusedError(r.message);
    return c.json(r, 200);
  });

  app.openapi(routes.approvals, async (c) => {
    const { agents } = await allow('approvals', c);
    return c.json(await agents.approvals(c.req.valid('query').agentId), 200);
  });

  app.openapi(routes.decide, async (c) => {
    const { p, agents } = await allow('decide', c);
    const { agentId, callId } = c.req.valid('param');
    const body = c.req.valid('json');
    return c.json(await agents.decide(agentId, { ...body, callId, by: p.sub }), 200);
  });

  const streams = new EventStreams(opts);
  /** Who holds a stream: the token's tenant and `sub`; without auth, every caller is one admin, told apart by address. */
  const holder = (c: Context, p: Principal): StreamHolder =>
    opts.auth
      ? { tenant: p.tenant, client: p.sub, clientBy: 'sub' }
      : { client: nodeSocket(c)?.remoteAddress ?? 'unknown', clientBy: 'address' };
  app.openapi(routes.taskEvents, async (c) => {
    const { p, agents } = await allow('taskEvents', c);
    const { workflowId } = c.req.valid('param');
    return streams.serve(c, holder(c, p), (o) => agents.taskEvents(workflowId, o));
  });
  app.openapi(routes.agentEvents, async (c) => {
    const { p, agents } = await allow('agentEvents', c);
    const { agentId } = c.req.valid('param');
    return streams.serve(c, holder(c, p), (o) => agents.agentEvents(agentId, o));
  });

  app.openapi(routes.limits, async (c) => {
    const { p, agents } = await allow('limits', c);
    const body = c.req.valid('json');
    const r = await agents.setLimits(c.req.valid('param').agentId, {
      safety: body.safety,
      ...(body.approval ? { approval: body.approval } : {}),
      by: p.sub,
      ...(body.note ? { note: body.note } : {}),
    });
    return c.json(r, 200);
  });

  // A tenant's budgets are its own (budget-<tenant>:<name>), like its agents.
  app.openapi(routes.budgets, async (c) => {
    const { agents } = await allow('budgets', c);
    return c.json({ budgets: await agents.budgets().list() }, 200);
  });
  app.openapi(routes.budget, async (c) => {
    const { agents } = await allow('budget', c);
    return c.json(await agents.budgets().show(c.req.valid('param').name), 200);
  });
  app.openapi(routes.createBudget, async (c) => {
    const { p, agents } = await allow('createBudget', c);
    const created = await agents.budgets().create({ ...c.req.valid('json'), by: p.sub });
    c.header('Location', `/v1/budgets/${created.name}`);
    return c.json(created, 201);
  });
  app.openapi(routes.raiseBudget, async (c) => {
    const { p, agents } = await allow('raiseBudget', c);
    const raised = await agents.budgets().raise(c.req.valid('param').name, { ...c.req.valid('json'), by: p.sub });
    return c.json(raised, 200);
  });

  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'OpenStarry on Temporal',
      version: '1',
      description:
        'Start, watch, halt and unlock durable, self-correcting agents, and change their limits. See docs/API.md.',
    },
  });

  app.get('/healthz', async (c) => {
    try {
      const agents = await opts.agents();
      await agents.client.workflowService.getSystemInfo({});
      return c.json({ ok: true, temporal: 'reachable' });
    } catch (err) {
      c.header('Retry-After', '5');
      return c.json({ ok: false, temporal: 'unreachable', detail: messageOf(err) }, 503);
    }
  });

  app.notFound((c) => problem(c, 404, `no route ${c.req.method} ${new URL(c.req.url).pathname}: see /openapi.json`));
  app.onError((err, c) => errorResponse(c, err));
  return app;
}

/** A body that may be absent (halt, unlock): `{}` when empty, checked against the schema otherwise. */
async function optionalBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
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
  if (unreachable(err)) {
    c.header('Retry-After', '5');
    return problem(c, 503, `Temporal cannot be reached: ${messageOf(err)}`);
  }
  console.error('[api] unexpected error', err);
  return problem(c, 500, 'an unexpected error; the server log has the details');
}
