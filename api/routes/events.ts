/**
 * The live event routes (Server-Sent Events, docs/API.md#live-events): a task's events until it ends, and
 * an agent's with those of every task it runs. The streams of one app share their caps (api/event-streams.ts).
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { StreamEventDataSchemas } from '../../core/contract';
import type { StreamHolder } from '../../core/stream-caps';
import type { Authenticator, Principal } from '../auth';
import { EventStreams, nodeSocket, type StreamSettings } from '../event-streams';
import { agentPath, common, endpoint, problems, secured, taskPath } from './kit';

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

const taskEventsRoute = createRoute({
  method: 'get',
  path: '/v1/tasks/{workflowId}/events',
  summary: "A task's live events (Server-Sent Events), until it ends",
  security: secured,
  request: { params: taskPath, ...streamRequest },
  responses: streamResponse(
    'Every tick, LLM answer, tool call, pain, alert, message, approval and state change; `end` last',
  ),
});

const agentEventsRoute = createRoute({
  method: 'get',
  path: '/v1/agents/{agentId}/events',
  summary: "An agent's live events and those of every task it runs (Server-Sent Events), until the client leaves",
  security: secured,
  request: { params: agentPath, ...streamRequest },
  responses: streamResponse("The agent's state changes, tasks, messages, approvals and alerts, and each task's events"),
});

/**
 * The two event routes of one app, over the streams it serves (their caps count across both).
 *
 * ```ts
 * const { taskEvents, agentEvents } = eventEndpoints({ auth, maxStreams: 100 });
 * ```
 */
export function eventEndpoints(opts: StreamSettings & { auth: Authenticator | undefined }) {
  const streams = new EventStreams(opts);
  /** Who holds a stream: the token's tenant and `sub`; without auth, every caller is one admin, told apart by address. */
  const holder = (c: Context, p: Principal): StreamHolder =>
    opts.auth
      ? { tenant: p.tenant, client: p.sub, clientBy: 'sub' }
      : { client: nodeSocket(c)?.remoteAddress ?? 'unknown', clientBy: 'address' };
  const taskEvents = endpoint({
    name: 'taskEvents',
    role: 'viewer',
    route: taskEventsRoute,
    handle(c, { p, agents }) {
      const { workflowId } = c.req.valid('param');
      return streams.serve(c, holder(c, p), (o) => agents.taskEvents(workflowId, o));
    },
  });
  const agentEvents = endpoint({
    name: 'agentEvents',
    role: 'viewer',
    route: agentEventsRoute,
    handle(c, { p, agents }) {
      const { agentId } = c.req.valid('param');
      return streams.serve(c, holder(c, p), (o) => agents.agentEvents(agentId, o));
    },
  });
  return { taskEvents, agentEvents };
}
