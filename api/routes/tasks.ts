/**
 * The task routes: submit a task (starting its agent when it does not exist, optionally waiting for the
 * result) and read a task's result (docs/API.md).
 */
import { createRoute, z } from '@hono/zod-openapi';
import { parseTaskConfig } from '../../core/config';
import { SubmitTaskInputSchema, SubmitTaskResultSchema, TaskIdSchema, TaskResultSchema } from '../../core/contract';
import { traceparentSchema } from '../../core/payloads';
import { agentPath, common, endpoint, json, problems, secured, taskPath } from './kit';

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

const RunningSchema = z.object({ workflowId: z.string(), status: z.literal('RUNNING') }).openapi('TaskRunning');

export const submit = endpoint({
  name: 'submit',
  role: 'operator',
  route: createRoute({
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
  async handle(c, { agents }) {
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
  },
});

export const task = endpoint({
  name: 'task',
  role: 'viewer',
  route: createRoute({
    method: 'get',
    path: '/v1/tasks/{workflowId}',
    summary: "A task's result",
    security: secured,
    request: { params: taskPath },
    responses: {
      200: json(TaskResultSchema, 'The task has ended'),
      202: json(RunningSchema, 'The task is still running'),
      ...problems(400, 404, ...common),
    },
  }),
  async handle(c, { agents }) {
    const { workflowId } = c.req.valid('param');
    const result = await agents.taskResult(workflowId);
    return result ? c.json(result, 200) : c.json({ workflowId, status: 'RUNNING' as const }, 202);
  },
});
