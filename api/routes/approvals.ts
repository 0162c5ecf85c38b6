/** The approval routes: the tool calls that wait for a human decision, and the decision (docs/API.md). */
import { createRoute, z } from '@hono/zod-openapi';
import { AgentIdSchema, ApprovalDecisionSchema, ApprovalListSchema, DecisionInputSchema } from '../../core/contract';
import { agentPath, common, endpoint, json, problems, secured } from './kit';

const DecisionBodySchema = z
  .object({
    decision: DecisionInputSchema.shape.decision,
    reason: DecisionInputSchema.shape.reason,
    note: DecisionInputSchema.shape.note,
    args: DecisionInputSchema.shape.args,
  })
  .strict()
  .openapi('Decision');

export const approvals = endpoint({
  name: 'approvals',
  role: 'viewer',
  route: createRoute({
    method: 'get',
    path: '/v1/approvals',
    summary: 'Tool calls that wait for a human decision (of one agent with ?agentId=, else of every waiting agent)',
    security: secured,
    request: { query: z.object({ agentId: AgentIdSchema.optional() }) },
    responses: { 200: json(ApprovalListSchema, 'The waiting calls, oldest first'), ...problems(400, 404, ...common) },
  }),
  async handle(c, { agents }) {
    return c.json(await agents.approvals(c.req.valid('query').agentId), 200);
  },
});

export const decide = endpoint({
  name: 'decide',
  role: 'approver',
  route: createRoute({
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
  async handle(c, { p, agents }) {
    const { agentId, callId } = c.req.valid('param');
    const body = c.req.valid('json');
    return c.json(await agents.decide(agentId, { ...body, callId, by: p.sub }), 200);
  },
});
