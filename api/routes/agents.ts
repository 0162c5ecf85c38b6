/**
 * The agent routes: an agent's status and the list of agents, and a human's acts on one — a message,
 * SYSTEM_HALT, admin:unlock and admin:limits (docs/API.md).
 */
import { createRoute, z } from '@hono/zod-openapi';
import {
  AgentListSchema,
  AgentStateSchema,
  AgentStatusSchema,
  HaltInputSchema,
  HumanMessageSchema,
  LimitsInputSchema,
  LimitsResultSchema,
  MessageResultSchema,
  UnlockInputSchema,
  UnlockResultSchema,
} from '../../core/contract';
import { RefusedError } from '../../core/errors';
import { agentPath, common, endpoint, json, optionalBody, problems, secured } from './kit';

const HaltBodySchema = z.object({ reason: HaltInputSchema.shape.note }).strict().openapi('Halt');
const UnlockBodySchema = z
  .object({
    resume: UnlockInputSchema.shape.resume,
    addTokens: UnlockInputSchema.shape.addTokens,
    note: UnlockInputSchema.shape.note,
  })
  .strict()
  .openapi('Unlock');
const LimitsBodySchema = z
  .object({
    safety: LimitsInputSchema.shape.safety,
    approval: LimitsInputSchema.shape.approval,
    note: LimitsInputSchema.shape.note,
  })
  .strict()
  .openapi('Limits');
const MessageBodySchema = z.object({ text: HumanMessageSchema.shape.text }).strict().openapi('Message');

export const status = endpoint({
  name: 'status',
  role: 'viewer',
  route: createRoute({
    method: 'get',
    path: '/v1/agents/{agentId}',
    summary: "An agent's state query",
    security: secured,
    request: { params: agentPath },
    responses: { 200: json(AgentStatusSchema, "The agent's full status"), ...problems(400, 404, ...common) },
  }),
  async handle(c, { agents }) {
    return c.json(await agents.status(c.req.valid('param').agentId), 200);
  },
});

export const list = endpoint({
  name: 'list',
  role: 'viewer',
  route: createRoute({
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
  async handle(c, { agents }) {
    return c.json(await agents.listAgents(c.req.valid('query')), 200);
  },
});

export const message = endpoint({
  name: 'message',
  role: 'operator',
  route: createRoute({
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
  async handle(c, { p, agents }) {
    return c.json(await agents.message(c.req.valid('param').agentId, c.req.valid('json').text, p.sub), 200);
  },
});

export const halt = endpoint({
  name: 'halt',
  role: 'operator',
  route: createRoute({
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
  async handle(c, { p, agents }) {
    const { agentId } = c.req.valid('param');
    const body = await optionalBody(c, HaltBodySchema);
    await agents.halt(agentId, { by: p.sub, ...(body.reason ? { note: body.reason } : {}) });
    return c.json({ halted: true as const, agentId }, 202);
  },
});

export const unlock = endpoint({
  name: 'unlock',
  role: 'admin',
  route: createRoute({
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
  async handle(c, { p, agents }) {
    const body = await optionalBody(c, UnlockBodySchema);
    const r = await agents.unlock(c.req.valid('param').agentId, { ...body, by: p.sub });
    // Unlocking an agent that is not locked is a conflict with its state: the agent's own message says so.
    if (!r.unlocked) throw new RefusedError(r.message);
    return c.json(r, 200);
  },
});

export const limits = endpoint({
  name: 'limits',
  // Raising a limit is an admin's; an operator's task may only tighten them (core/limits.ts).
  role: 'admin',
  route: createRoute({
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
  async handle(c, { p, agents }) {
    const body = c.req.valid('json');
    const r = await agents.setLimits(c.req.valid('param').agentId, {
      safety: body.safety,
      ...(body.approval ? { approval: body.approval } : {}),
      by: p.sub,
      ...(body.note ? { note: body.note } : {}),
    });
    return c.json(r, 200);
  },
});
