/**
 * Submitting a task (AgentClient's `submit`, `submitExisting`, `resubmit`): an update of the agent, with
 * start when it is not running, sent only once a worker polls and refused by the agent past its
 * `acceptBy`, so a submit given up on never runs; one sent again with the same idempotency key or task
 * id runs at most once.
 */
import {
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type WorkflowUpdateHandle,
} from '@temporalio/client';
import type { TaskConfig } from '../core/config';
import {
  IdempotencyKeySchema,
  SUBMIT_EXPIRED,
  SubmitTaskInputSchema,
  parsePayload,
  type SubmitTaskInput,
  type SubmitTaskResult,
} from '../core/contract';
import { isRequestError, NotFoundError } from '../core/errors';
import { newAgentData, reportedOf } from '../core/agent-entity';
import { notResubmittable } from '../core/after-halt';
import { QUEUE_PRIORITY } from '../core/priority-inbox';
import { splitAgentRef } from '../core/tenant';
import type { agentWorkflow } from '../workflows';
import { agentWorkflowId, submitTaskUpdate } from '../workflows/messages';
import { startAttributes, TenantKey } from '../workflows/search-attributes';
import { agentState, agentWorkflowIdOf, ensureExists, fullId, type AgentScope } from './agent-scope';
import { hasLiveWorkerOn } from './connection';
import { searchAttributesFailure, updateFailure } from './failures';
import { runEvents } from './history';

/**
 * No worker took a submit: none polls the agent's task queue, or none took the submit within the
 * client's `acceptTimeoutMs`. Nothing was submitted and nothing of it runs later (its agent refuses it
 * past its `acceptBy`): submit again once a worker runs; with an idempotency key or a task id, a submit
 * sent again runs at most once. The HTTP API answers it 503 with `Retry-After`.
 *
 * ```ts
 * try { await agents.submit('a1', { goal, config }); } catch (e) { if (e instanceof NoWorkerError) setTimeout(retry, e.retryAfterSeconds * 1000); }
 * ```
 */
export class NoWorkerError extends Error {
  /** When to try again. */
  readonly retryAfterSeconds = 5;
  constructor(
    readonly taskQueue: string,
    message: string,
  ) {
    super(message);
    this.name = 'NoWorkerError';
  }
}

/**
 * A task to submit: its config parsed at the edge and sent once, to the agent. `parseTaskConfig` keeps
 * of `safety` only the limits the config gives, so the others are the agent's; a whole `AgentConfig`
 * (`parseAgentConfig`) gives every limit, which must not be looser than an existing agent's.
 */
export interface SubmitInput {
  goal: string;
  config: TaskConfig;
  /** 1 (first) .. 9; default 5. */
  priority?: number;
  /** The task's id (default `task-<n>`). A submit sent again with the same id is answered as the first was. */
  taskId?: string;
  /**
   * A submit sent again with the same key is answered as the first was and runs at most once (the HTTP API's
   * `Idempotency-Key`).
   */
  idempotencyKey?: string;
  /**
   * The caller's W3C trace context (`00-<trace id>-<span id>-<flags>`): when the worker traces, the task's
   * trace links to that span (docs/OBSERVABILITY.md).
   */
  traceparent?: string;
}

/** A submit's wait for a worker (`acceptTimeoutMs`), by default. */
const ACCEPT_TIMEOUT_MS = 20_000;
/** Added to a submit's `acceptBy` for the difference between this host's clock and the server's. */
const CLOCK_MARGIN_MS = 2_000;
/** How long a worker seen polling counts as there, so a burst of submits asks the server once. */
const WORKER_SEEN_MS = 10_000;
/** How long a submit looks for a worker that is just starting (its first poll on its way). */
const WORKER_GRACE_MS = 3_000;
/** When a worker was last seen polling a task queue, per Temporal client: shared by `forTenant`'s clients. */
const workerSeen = new WeakMap<AgentScope['client'], Map<string, number>>();

/** AgentClient.submit: the task, starting the agent workflow if it is not running. */
export async function submit(s: AgentScope, agentId: string, input: SubmitInput): Promise<SubmitTaskResult> {
  const full = fullId(s, agentId);
  const tenant = splitAgentRef(full).tenant;
  const start = () =>
    new WithStartWorkflowOperation<typeof agentWorkflow>('agentWorkflow', {
      workflowId: agentWorkflowId(full),
      taskQueue: s.taskQueue,
      args: [
        {
          agentId: full,
          ...(s.continueAsNewAfterEvents ? { continueAsNewAfterEvents: s.continueAsNewAfterEvents } : {}),
        },
      ],
      workflowIdConflictPolicy: 'USE_EXISTING',
      // Before its tasks' ticks on saturated workers; kept across continue-as-new.
      priority: { priorityKey: QUEUE_PRIORITY.agent },
      staticSummary: `agent ${full}`,
      // A new agent's search attributes as its first report would write them: given at the start, that
      // report upserts none, and the list shows the agent's state from its start. A tenant's agent also
      // carries its tenant, which the agent never writes: continue-as-new keeps the attributes of the
      // run before, so it stays for the agent's life.
      typedSearchAttributes: [
        ...startAttributes(reportedOf(newAgentData(full))),
        ...(tenant !== undefined ? [{ key: TenantKey, value: tenant }] : []),
      ],
    });
  return sendSubmit(
    s,
    agentWorkflowId(full),
    { ...submitPayload(input), config: input.config },
    submitUpdateId(input),
    start,
  );
}

/** AgentClient.submitExisting: a task to an agent that exists, with its own config or the agent's. */
export async function submitExisting(
  s: AgentScope,
  agentId: string,
  input: Omit<SubmitInput, 'config'> & { config?: TaskConfig },
): Promise<SubmitTaskResult> {
  const payload = submitPayload(input);
  await ensureExists(s, agentId);
  return sendSubmit(
    s,
    agentWorkflowIdOf(s, agentId),
    { ...payload, ...(input.config ? { config: input.config } : {}) },
    submitUpdateId(input),
  );
}

/** AgentClient.resubmit: a task a halt cancelled before it started, again, as it was. */
export async function resubmit(s: AgentScope, agentId: string, taskId: string): Promise<SubmitTaskResult> {
  const state = await agentState(s, agentId);
  const cancelled = state.cancelledTasks.find((t) => t.taskId === taskId);
  if (!cancelled) throw new NotFoundError(notResubmittable(agentId, taskId, state));
  const payload = {
    goal: cancelled.goal,
    priority: cancelled.priority,
    taskId,
    ...(cancelled.config !== undefined ? { config: cancelled.config as TaskConfig } : {}),
  };
  // Its own update id, not the task id's: the task was submitted under that one before.
  return sendSubmit(s, agentWorkflowIdOf(s, agentId), payload, undefined);
}

/**
 * Send a submit once a worker polls, and wait for its answer. The submit carries its `acceptBy`: a
 * worker that takes it later than the client waits refuses it, so a submit given up on never runs.
 * With `start`, an agent not running is started by the submit (update-with-start).
 */
async function sendSubmit(
  s: AgentScope,
  workflowId: string,
  payload: SubmitTaskInput,
  updateId: string | undefined,
  start?: () => WithStartWorkflowOperation<typeof agentWorkflow>,
): Promise<SubmitTaskResult> {
  await workerPolls(s);
  const waitMs = s.acceptTimeoutMs ?? ACCEPT_TIMEOUT_MS;
  for (let attempt = 1; ; attempt++) {
    const acceptBy = Date.now() + waitMs + CLOCK_MARGIN_MS;
    const options = {
      args: [{ ...payload, acceptBy }] as [SubmitTaskInput],
      waitForStage: 'ACCEPTED' as const,
      ...(updateId ? { updateId } : {}),
    };
    let handle: WorkflowUpdateHandle<SubmitTaskResult>;
    try {
      handle = await s.client.connection.withDeadline(Date.now() + waitMs, () =>
        start
          ? s.client.workflow.startUpdateWithStart(submitTaskUpdate, { ...options, startWorkflowOperation: start() })
          : s.client.workflow.getHandle(workflowId).startUpdate(submitTaskUpdate, options),
      );
    } catch (err) {
      if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
        await removeUntaken(s, workflowId);
        throw untaken(s.taskQueue, waitMs);
      }
      // The agent this submit came to ended meanwhile (its first submit was refused): start it again.
      if (start && attempt < 3 && err instanceof WorkflowNotFoundError) continue;
      throw (await searchAttributesFailure(err, s.client.connection, s.client.options.namespace)) ?? err;
    }
    try {
      return await handle.result();
    } catch (err) {
      const failure = updateFailure(err, 'task refused');
      // The same update id came to the agent from an attempt given up on: that one is refused now, so this one is
      // new.
      if (attempt < 3 && isRequestError(failure) && failure.issues.includes(SUBMIT_EXPIRED) && Date.now() < acceptBy)
        continue;
      if (start && handle.workflowRunId) await removeEnded(s, workflowId, handle.workflowRunId);
      throw failure;
    }
  }
}

/** A submit that workers polling the task queue lately did not take within `waitMs`. */
function untaken(taskQueue: string, waitMs: number): NoWorkerError {
  return new NoWorkerError(
    taskQueue,
    `no worker took the submit within ${waitMs / 1000} s, though one polled task queue ${taskQueue} lately: ` +
      'nothing was submitted, and the agent refuses it if a worker takes it later. The workers are busy (a burst of ' +
      'submits) or stuck: submit again in a few seconds (with the same idempotency key or task id, it runs at most once)',
  );
}

/**
 * Wait (briefly: a worker that is just starting has its first poll on the way) until a worker polls
 * the task queue. @throws NoWorkerError when none does.
 */
async function workerPolls(s: AgentScope): Promise<void> {
  const { taskQueue, client } = s;
  const seen = workerSeen.get(client) ?? new Map<string, number>();
  workerSeen.set(client, seen);
  if (Date.now() - (seen.get(taskQueue) ?? 0) < WORKER_SEEN_MS) return;
  const until = Date.now() + WORKER_GRACE_MS;
  while (!(await hasLiveWorkerOn(client.connection, client.options.namespace, taskQueue))) {
    if (Date.now() > until) {
      throw new NoWorkerError(
        taskQueue,
        `no worker polls task queue ${taskQueue} (namespace ${client.options.namespace}): nothing was submitted. ` +
          'Start one (`starry worker`, or `starry dev` on this machine) and submit again',
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  seen.set(taskQueue, Date.now());
}

/**
 * After a submit no worker took: the agent's run, when no worker ever took its first workflow task,
 * holds nothing (no submit was ever accepted), so it is deleted, and the submits waiting on it with it.
 */
async function removeUntaken(s: AgentScope, workflowId: string): Promise<void> {
  try {
    const d = await s.client.workflow.getHandle(workflowId).describe();
    if (d.status.name !== 'RUNNING' || d.historyLength > 20) return;
    for await (const e of runEvents(s.client, workflowId, d.runId, {}))
      if (e.workflowTaskCompletedEventAttributes) return;
    await deleteRun(s, workflowId, d.runId);
  } catch {
    // Nothing to remove (or no right to): the submit is refused past its acceptBy anyway.
  }
}

/** After a refused submit: a run that has ended is an agent whose first submit it was; it held nothing. */
async function removeEnded(s: AgentScope, workflowId: string, runId: string): Promise<void> {
  try {
    const d = await s.client.workflow.getHandle(workflowId, runId).describe();
    if (d.status.name === 'COMPLETED') await deleteRun(s, workflowId, runId);
  } catch {
    // Already gone, or no right to delete: it is not running, so it is no agent either way.
  }
}

async function deleteRun(s: AgentScope, workflowId: string, runId: string): Promise<void> {
  await s.client.workflowService.deleteWorkflowExecution({
    namespace: s.client.options.namespace,
    workflowExecution: { workflowId, runId },
  });
}

/** A submit's task fields, checked here (the client is an edge): the config is typed, parsed by its caller. */
function submitPayload(input: {
  goal: string;
  priority?: number;
  taskId?: string;
  idempotencyKey?: string;
  traceparent?: string;
}): SubmitTaskInput {
  if (input.idempotencyKey !== undefined) parsePayload(IdempotencyKeySchema, input.idempotencyKey, 'idempotency key');
  const { goal, priority, taskId, traceparent } = input;
  return parsePayload(
    SubmitTaskInputSchema,
    {
      goal,
      ...(priority !== undefined ? { priority } : {}),
      ...(taskId !== undefined ? { taskId } : {}),
      ...(traceparent !== undefined ? { traceparent } : {}),
    },
    'task',
  ) as SubmitTaskInput;
}

/**
 * The update id of a submit sent again: from its idempotency key, else its task id. The server answers
 * an update id it has seen with that update's outcome, and the agent remembers the ids it accepted
 * across continue-as-new (`AgentEntity.answered`): the same submit runs at most once.
 */
function submitUpdateId(input: { idempotencyKey?: string; taskId?: string }): string | undefined {
  if (input.idempotencyKey !== undefined) return `submit-key:${input.idempotencyKey}`;
  if (input.taskId !== undefined) return `submit-task:${input.taskId}`;
  return undefined;
}
