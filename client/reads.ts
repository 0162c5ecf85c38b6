/**
 * Reading agents (AgentClient's `status`, `visibleState`, `listAgents`, `taskEvents`, `agentEvents`): an
 * agent's state with its running task's live counts, what the visibility store says of agents (no worker
 * needed), and live events, each naming agents as the client's tenant does.
 */
import { decodeTypedSearchAttributes } from '@temporalio/common/lib/converter/payload-search-attributes';
import type { AgentList, AgentState, AgentStatus, StreamEvent } from '../core/contract';
import { qualifiedAgentId, tenantOfWorkflowId } from '../core/tenant';
import { agentWorkflowId, taskProgressQuery, type TaskProgress } from '../workflows/messages';
import { AgentIdKey, AgentStateKey, LockReasonKey, TenantKey, TokensUsedKey } from '../workflows/search-attributes';
import {
  agentState,
  agentWorkflowIdOf,
  fullId,
  noAgent,
  ownId,
  ownResult,
  unknownAgent,
  type AgentScope,
} from './agent-scope';
import { openAgentStream } from './agent-stream';
import { openTaskStream, type StreamOptions } from './event-stream';
import { isNotFoundStatus, noTaskWorkflow } from './failures';

/** AgentClient.status: the agent's `state` query with its running task's live counts. */
export async function status(s: AgentScope, agentId: string): Promise<AgentStatus> {
  const described = s.client.workflow
    .getHandle(agentWorkflowIdOf(s, agentId))
    .describe()
    .catch(() => undefined);
  const [own, d] = await Promise.all([agentState(s, agentId), described]);
  if (d?.status.name === 'COMPLETED')
    throw noAgent(s, agentId, 'its first submit was refused, so it ended holding nothing');
  const st = await withLiveTask(s, own);
  return s.tenant === undefined
    ? st
    : { ...st, agentId: ownId(s, st.agentId), tasks: st.tasks.map((t) => ownResult(s, t)) };
}

/**
 * The agent's state with its running task's live counts: the agent hears of them every few ticks,
 * the task knows them now (its `progress` query). A task that cannot answer (it just ended, its
 * worker is busy) leaves the agent's own view.
 */
async function withLiveTask(s: AgentScope, st: AgentStatus): Promise<AgentStatus> {
  const current = st.currentTask;
  if (!current) return st;
  let live: TaskProgress;
  try {
    live = await s.client.workflow.getHandle(current.workflowId).query(taskProgressQuery);
  } catch {
    return st;
  }
  if (live.taskId !== current.taskId || live.tick < current.tick) return st;
  const known = current.runTokens ?? 0;
  return {
    ...st,
    tokensUsed: st.tokensUsed - known + live.runTokens,
    counters: live.counters,
    currentTask: {
      ...current,
      tick: live.tick,
      runTokens: live.runTokens,
      ...(live.traceId ? { traceId: live.traceId } : {}),
    },
  };
}

/** AgentClient.visibleState: an agent's search attributes. */
export async function visibleState(
  s: AgentScope,
  agentId: string,
): Promise<{ agentState?: string; lockReason?: string; tokensUsed?: number }> {
  const workflowId = agentWorkflowIdOf(s, agentId);
  try {
    const d = await s.client.workflow.getHandle(workflowId).describe();
    const sa = d.typedSearchAttributes;
    const agentState = sa.get(AgentStateKey);
    const lockReason = sa.get(LockReasonKey);
    const tokensUsed = sa.get(TokensUsedKey);
    return {
      ...(agentState ? { agentState } : {}),
      ...(lockReason ? { lockReason } : {}),
      ...(tokensUsed !== undefined ? { tokensUsed } : {}),
    };
  } catch (err) {
    throw unknownAgent(s, err, agentId);
  }
}

/** AgentClient.listAgents: a page of running agents from the visibility store. */
export async function listAgents(
  s: AgentScope,
  opts: { state?: AgentState; pageSize?: number; nextPageToken?: string } = {},
): Promise<AgentList> {
  // Both values are checked ids and states: no quote can reach the query.
  const query = [
    `WorkflowType = 'agentWorkflow'`,
    `ExecutionStatus = 'Running'`,
    ...(s.tenant !== undefined ? [`${TenantKey.name} = '${s.tenant}'`] : []),
    ...(opts.state ? [`${AgentStateKey.name} = '${opts.state}'`] : []),
  ].join(' AND ');
  const res = await s.client.workflowService.listWorkflowExecutions({
    namespace: s.client.options.namespace,
    query,
    pageSize: opts.pageSize ?? 50,
    ...(opts.nextPageToken ? { nextPageToken: Buffer.from(opts.nextPageToken, 'base64url') } : {}),
  });
  const own = `agent-${qualifiedAgentId(s.tenant, '')}`;
  // The query keeps to the tenant; its workflow ids say so again.
  const executions = (res.executions ?? []).filter(
    (e) => s.tenant === undefined || (e.execution?.workflowId ?? '').startsWith(own),
  );
  const agents = executions.map((e) => {
    const attributes = decodeTypedSearchAttributes(e.searchAttributes?.indexedFields);
    const agentState = attributes.get(AgentStateKey) as AgentState | undefined;
    const lockReason = attributes.get(LockReasonKey);
    const tokensUsed = attributes.get(TokensUsedKey);
    return {
      agentId: ownId(s, attributes.get(AgentIdKey) ?? (e.execution?.workflowId ?? '').replace(/^agent-/, '')),
      workflowId: e.execution?.workflowId ?? '',
      ...(agentState ? { agentState } : {}),
      ...(lockReason ? { lockReason } : {}),
      ...(tokensUsed !== undefined ? { tokensUsed } : {}),
    };
  });
  const token = res.nextPageToken?.length ? Buffer.from(res.nextPageToken).toString('base64url') : undefined;
  return { agents, ...(token ? { nextPageToken: token } : {}) };
}

/** AgentClient.taskEvents: a task's live events. */
export async function taskEvents(
  s: AgentScope,
  workflowId: string,
  opts: StreamOptions = {},
): Promise<AsyncGenerator<StreamEvent>> {
  if (s.tenant !== undefined && tenantOfWorkflowId(workflowId) !== s.tenant) throw noTaskWorkflow(workflowId);
  try {
    return ownEvents(s, await openTaskStream(s.client, workflowId, opts));
  } catch (err) {
    if (isNotFoundStatus(err)) throw noTaskWorkflow(workflowId, err);
    throw err;
  }
}

/** AgentClient.agentEvents: an agent's live events and its tasks'. */
export async function agentEvents(
  s: AgentScope,
  agentId: string,
  opts: StreamOptions = {},
): Promise<AsyncGenerator<StreamEvent>> {
  const workflowId = agentWorkflowIdOf(s, agentId);
  try {
    return ownEvents(s, await openAgentStream(s.client, workflowId, opts));
  } catch (err) {
    throw unknownAgent(s, err, agentId);
  }
}

/** A tenant's events name its agents by their own ids, as its other answers do. */
async function* ownEvents(s: AgentScope, events: AsyncGenerator<StreamEvent>): AsyncGenerator<StreamEvent> {
  if (s.tenant === undefined) return yield* events;
  for await (const e of events) {
    if (e.event === 'end' && e.data.result) yield { ...e, data: { ...e.data, result: ownResult(s, e.data.result) } };
    else if (e.event === 'approval' && e.data.agentId)
      yield { ...e, data: { ...e.data, agentId: ownId(s, e.data.agentId) } };
    else yield e;
  }
}

/** One of an agent's tasks as the visibility store lists it (`AgentClient.listTasks`). */
export interface TaskListing {
  taskId: string;
  workflowId: string;
  /** The task workflow's status: RUNNING, COMPLETED, FAILED, CANCELLED, TERMINATED, … */
  status: string;
  /** When it started (ISO 8601). */
  startedAt: string;
}

/**
 * AgentClient.listTasks: the agent's task workflows from the visibility store (their `AgentId`), oldest
 * first, at most `limit` of the latest; needs no worker.
 */
export async function listTasks(s: AgentScope, agentId: string, limit = 100): Promise<TaskListing[]> {
  const full = fullId(s, agentId);
  const prefix = `${agentWorkflowId(full)}-`;
  // A checked id (no quote can reach the query).
  const query = `WorkflowType = 'taskWorkflow' AND ${AgentIdKey.name} = '${full}'`;
  const byId = new Map<string, TaskListing>();
  for await (const w of s.client.workflow.list({ query, pageSize: limit })) {
    const startedAt = w.startTime.toISOString();
    const seen = byId.get(w.workflowId);
    // A task that continued as new is listed once per run: its latest run says where it is.
    if (!seen || seen.startedAt < startedAt)
      byId.set(w.workflowId, {
        taskId: w.workflowId.startsWith(prefix) ? w.workflowId.slice(prefix.length) : w.workflowId,
        workflowId: w.workflowId,
        status: w.status.name,
        startedAt,
      });
    if (byId.size >= limit) break;
  }
  return [...byId.values()].sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}
