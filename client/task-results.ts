/**
 * A task's result (AgentClient's `waitForTask`, `taskResult`, `fullResult`): waited for with a long poll
 * on its workflow's close rather than queries, read from the task's own workflow (whole) or, when it has
 * none of its own, from what its agent recorded.
 */
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { TaskEndedSchema, type AgentStatus, type TaskResult } from '../core/contract';
import { NotFoundError } from '../core/errors';
import { agentOfTaskWorkflowId, tenantOfWorkflowId } from '../core/tenant';
import type { taskWorkflow } from '../workflows';
import { TASK_FAILED, agentStateQuery, agentWorkflowId, taskEndedSignal, taskWorkflowId } from '../workflows/messages';
import type { TaskRunOutput } from '../workflows/task';
import { agentState, fullId, ownResult, type AgentScope } from './agent-scope';
import { grpcStatus, isQueryTimeout, noTaskWorkflow } from './failures';

/** AgentClient.waitForTask: until a task has a result or was cancelled from the queue. */
export async function waitForTask(
  s: AgentScope,
  agentId: string,
  taskId: string,
  opts: { pollMs?: number; timeoutMs?: number; after?: (r: TaskResult) => boolean } = {},
): Promise<TaskResult> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30 * 60_000);
  const accept = opts.after ?? (() => true);
  const workflowId = taskWorkflowId(fullId(s, agentId), taskId);
  const late = () => new Error(`task ${taskId} of agent ${agentId} did not finish in time`);
  const pause = () => new Promise((r) => setTimeout(r, opts.pollMs ?? 100));
  for (;;) {
    // While the task runs, wait for its workflow to close on the server (a long poll the worker never
    // sees), and ask the agent only then: with many agents, queries are what would keep a worker busy
    // (a query every 10 s of a long task cost the server and the worker a third of a query a tick at
    // 200 agents). A task still queued has no workflow yet: the poll returns at once and the agent
    // is asked.
    let run: 'open' | 'closed' | 'missing';
    while ((run = await closedWithin(s, workflowId, Math.min(10_000, deadline - Date.now()))) === 'open') {
      if (Date.now() > deadline) throw late();
    }
    // Closed: the agent records the result in its next workflow task, so ask a moment later.
    if (run === 'closed') await pause();
    const st = await statusWhileBusy(s, agentId);
    if (st) {
      const result = st.tasks.find((t) => t.taskId === taskId);
      if (result && accept(result) && st.currentTask?.taskId !== taskId)
        return (await fullResult(s, result)) ?? ownResult(s, result);
      const cancelled = st.cancelledTasks.find((t) => t.taskId === taskId);
      if (cancelled) return cancelledResult(st, { agentId, taskId, workflowId }, cancelled.reason);
    }
    if (Date.now() > deadline) throw late();
    // A moment for a queued task to start (a closed one waits at the top of the next round).
    if (run === 'missing') await pause();
  }
}

/** The result of a task a halt cancelled from the queue: it never ran. */
function cancelledResult(
  st: AgentStatus,
  task: { agentId: string; taskId: string; workflowId: string },
  reason: string,
): TaskResult {
  return {
    ...task,
    outcome: 'CANCELLED',
    agentState: st.agentState,
    reason: st.reason ?? { code: 'SYSTEM_HALT', message: reason },
    ticks: 0,
    tokensUsed: 0,
    toolCalls: [],
    injections: [],
  };
}

/** The agent's status, or undefined when its worker is too busy to answer a query in time (ask again). */
async function statusWhileBusy(s: AgentScope, agentId: string): Promise<AgentStatus | undefined> {
  try {
    return await agentState(s, agentId);
  } catch (err) {
    if (isQueryTimeout(err)) return undefined;
    throw err;
  }
}

/**
 * Wait up to `ms` for the workflow's latest run to close: `closed`, `open` when the time ran out, or
 * `missing` when there is no such workflow yet (a queued task) or the server could not say.
 */
async function closedWithin(s: AgentScope, workflowId: string, ms: number): Promise<'closed' | 'open' | 'missing'> {
  const { connection, options } = s.client;
  try {
    const res = await connection.withDeadline(Date.now() + Math.max(ms, 100), () =>
      connection.workflowService.getWorkflowExecutionHistory({
        namespace: options.namespace,
        execution: { workflowId },
        waitNewEvent: true,
        historyEventFilterType: temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
        skipArchival: true,
      }),
    );
    return res.history?.events?.length ? 'closed' : 'open';
  } catch (err) {
    if ((err as { code?: number }).code === grpcStatus.DEADLINE_EXCEEDED) return 'open';
    // Not there (yet), or anything else: the status query decides.
    return 'missing';
  }
}

/** AgentClient.fullResult: a task's result as its own workflow returned it, the agent's record on top. */
export async function fullResult(s: AgentScope, record: TaskResult): Promise<TaskResult | undefined> {
  const full = await taskResult(s, record.workflowId).catch(() => undefined);
  if (full?.taskId !== record.taskId) return undefined;
  return {
    ...full,
    outcome: record.outcome,
    agentState: record.agentState,
    ...(record.reason ? { reason: record.reason } : {}),
  };
}

/** AgentClient.taskResult: the result a task workflow returned, or undefined while it runs. */
export async function taskResult(s: AgentScope, workflowId: string): Promise<TaskResult | undefined> {
  // Another tenant's task is unknown here, in the same words as a missing one.
  if (s.tenant !== undefined && tenantOfWorkflowId(workflowId) !== s.tenant) throw noTaskWorkflow(workflowId);
  const handle = s.client.workflow.getHandle<typeof taskWorkflow>(workflowId);
  let status: string;
  try {
    const d = await handle.describe();
    status = d.status.name;
    if (status === 'RUNNING') return undefined;
    if (status === 'CANCELLED') {
      const ended = await endedOutput(s, workflowId, d.runId);
      if (ended) return ownResult(s, ended.result);
    } else if (status === 'COMPLETED' || status === 'FAILED') {
      return ownResult(s, (await handle.result()).result);
    }
  } catch (err) {
    if (
      err instanceof WorkflowFailedError &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type === TASK_FAILED
    ) {
      const out = err.cause.details?.[0] as TaskRunOutput | undefined;
      return out && ownResult(s, out.result);
    }
    if (err instanceof WorkflowNotFoundError) throw noTaskWorkflow(workflowId, err);
    throw err;
  }
  const recorded = await recordedResult(s, workflowId);
  if (recorded) return recorded;
  throw new NotFoundError(
    `task workflow ${workflowId} ended ${status} with no result of its own, and its agent has no record of it ` +
      '(or no worker answered): its history is in the Web UI',
  );
}

/**
 * The output a halted task sent its agent just before it ended CANCELED (workflows/task.ts): the
 * `taskEnded` signal's payload, in the task's own history, so no worker is needed to read it. Among
 * the run's last events, so the history is read from its end.
 */
async function endedOutput(s: AgentScope, workflowId: string, runId: string): Promise<TaskRunOutput | undefined> {
  const { workflowService, options } = s.client;
  let nextPageToken: Uint8Array | undefined;
  do {
    const res = await workflowService.getWorkflowExecutionHistoryReverse({
      namespace: options.namespace,
      execution: { workflowId, runId },
      // A batch at a time: the last few hold it, and each stays under gRPC's message limit whatever the task wrote.
      maximumPageSize: 1,
      ...(nextPageToken?.length ? { nextPageToken } : {}),
    });
    for (const e of res.history?.events ?? []) {
      const sent = e.signalExternalWorkflowExecutionInitiatedEventAttributes;
      const payload = sent?.signalName === taskEndedSignal.name ? sent?.input?.payloads?.[0] : undefined;
      if (!payload) continue;
      const parsed = TaskEndedSchema.safeParse(defaultPayloadConverter.fromPayload<unknown>(payload));
      return parsed.success ? (parsed.data as TaskRunOutput) : undefined;
    }
    nextPageToken = res.nextPageToken ?? undefined;
  } while (nextPageToken?.length);
  return undefined;
}

/** The result the task's agent recorded for it (among its latest), or undefined (gone, or no worker answers). */
async function recordedResult(s: AgentScope, workflowId: string): Promise<TaskResult | undefined> {
  const agent = agentOfTaskWorkflowId(workflowId);
  if (!agent) return undefined;
  try {
    const st = await s.client.workflow.getHandle(agentWorkflowId(agent)).query(agentStateQuery);
    const record = st.tasks.find((t) => t.workflowId === workflowId);
    return record && ownResult(s, record);
  } catch {
    return undefined;
  }
}
