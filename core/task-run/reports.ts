/**
 * What a running task reports (docs/ARCHITECTURE.md#workflows): its `taskStatus` query, the progress its
 * agent hears every `PROGRESS_EVERY_TICKS` ticks, its search attributes and the details the Web UI
 * shows. Pure views of the run's books (`RunView`).
 */
import { approvalLine, type PendingApproval } from '../approval';
import type { TaskStatus } from '../contract';
import type { TaskProgress } from '../payloads';
import type { AgentState, Reported, TaskCheckpoint, TaskOutcome, TaskResult } from '../types';
import type { RunCounters } from './counters';
import type { TaskRunInput } from './io';
import type { Spend } from './spend';

/** The agent and the search attributes hear of a task's counts every this many ticks (see `progressDue`). */
export const PROGRESS_EVERY_TICKS = 10;

/** The run's books, as the reports and the output read them. */
export interface RunView {
  input: TaskRunInput;
  workflowId: string;
  checkpoint: TaskCheckpoint;
  counters: RunCounters;
  spend: Spend;
  halted: boolean;
  /** The task's trace, when its worker traces: in its details, so a person goes from the Web UI to it. */
  traceId: string | undefined;
}

/** Everything the task's result has so far, but how it ended. */
export function soFar(run: RunView): Omit<TaskResult, 'outcome' | 'agentState'> {
  const { agentId, taskId } = run.input;
  const cp = run.checkpoint;
  const { omitted } = run.counters.data;
  return {
    agentId,
    taskId,
    workflowId: run.workflowId,
    ticks: cp.ticks,
    tokensUsed: cp.tokensUsed,
    ...(cp.cachedInputTokens ? { cachedInputTokens: cp.cachedInputTokens } : {}),
    ...(run.input.price || cp.costUsd !== undefined ? { costUsd: cp.costUsd ?? 0 } : {}),
    toolCalls: cp.toolCalls,
    injections: cp.injections,
    ...(omitted.toolCalls || omitted.injections ? { omitted: { ...omitted } } : {}),
    ...(run.traceId ? { traceId: run.traceId } : {}),
  };
}

/** The task's `state` query: everything its result has so far, plus the counters and the halt flag. */
export function status(run: RunView): TaskStatus {
  const { counters } = run.counters.data;
  return { ...soFar(run), running: true, halted: run.halted, counters, ...run.counters.lastError() };
}

/**
 * Whether the agent should hear of this tick, and the task's search attributes take its counts:
 * every `PROGRESS_EVERY_TICKS` ticks (clients read a running task's counts from the task itself,
 * `progress` query, and the Web UI from its details; the agent's own copy feeds its search
 * attributes and its fallback when a task cannot answer). Each report costs the agent a workflow
 * task, which at one per tick was a third of a tick's cost; each search-attribute write is a
 * visibility write, a quarter of the dev server's CPU a tick at 200 agents (docs/BENCHMARKS.md).
 */
export function progressDue(cp: TaskCheckpoint): boolean {
  return cp.ticks % PROGRESS_EVERY_TICKS === 0;
}

/** What the task reports to its agent after a tick. */
export function progress(run: RunView): TaskProgress {
  const cp = run.checkpoint;
  const { runTokens, runCachedInputTokens, runCostUsd } = run.spend.data;
  return {
    taskId: run.input.taskId,
    tick: cp.ticks,
    tokensUsed: cp.tokensUsed,
    runTokens,
    ...(runCachedInputTokens ? { runCachedInputTokens } : {}),
    ...(run.input.price || runCostUsd ? { runCostUsd } : {}),
    counters: run.counters.data.counters,
    ...run.counters.lastError(),
    ...(run.traceId ? { traceId: run.traceId } : {}),
  };
}

/**
 * The Web UI's current details of the task (markdown). A closed task says how it ended: a suspended
 * one shows as Completed in the list, so its page says that it waits for a human and how to resume.
 */
export function details(
  run: RunView,
  waiting: readonly PendingApproval[],
  state: { agentState: AgentState; lockReason?: string | undefined; outcome?: TaskOutcome | undefined },
): string {
  const { agentState, lockReason, outcome } = state;
  const { input, checkpoint: cp } = run;
  const { safety } = input.config;
  const { counters } = run.counters.data;
  const last = cp.toolCalls.at(-1);
  const { agentId } = input;
  const cost = input.price
    ? ` · cost **$${run.spend.agentCost(input)}**${safety.costBudgetUsd !== undefined ? ` / $${safety.costBudgetUsd}` : ''}`
    : '';
  return [
    outcome
      ? `### Task ${input.taskId} · ${outcome} · agent ${agentState}`
      : `### Task ${input.taskId} · ${agentState}`,
    outcome === 'SUSPENDED'
      ? `- **suspended, waiting for a human**: \`starry unlock ${agentId} --resume\` continues it in a new run of this workflow; plain \`starry unlock ${agentId}\` ends it ABORTED`
      : '',
    `- tick **${cp.ticks}** (cap ${safety.maxTicks}) · tokens **${run.spend.agentTokens(input)}** / ${safety.tokenBudget}${cost}`,
    `- consecutive failures **${counters.consecutiveFailures}** · window ${counters.window.join(' ') || '—'}`,
    last
      ? `- last tool: \`${last.name}\` ${last.status}${last.error ? ` (${last.error.code})` : ''}`
      : '- no tool call yet',
    lockReason ? `- **${lockReason}**` : '',
    run.traceId ? `- trace \`${run.traceId}\`` : '',
    ...waiting.map((p) => approvalLine(agentId, p)),
  ].join('\n');
}

/**
 * What the task's search attributes say (workflows/search-attributes.ts): a closed task drops its
 * state, so `AgentState="SAFETY_LOCKOUT"` never lists tasks of agents unlocked since.
 */
export function reported(run: RunView, agentState: AgentState, closed: boolean, lockReason?: string): Reported {
  const cp = run.checkpoint;
  return {
    agentId: run.input.agentId,
    agentState: closed ? null : agentState,
    tick: cp.ticks,
    tokensUsed: cp.tokensUsed,
    ...run.counters.lastError(),
    lockReason: lockReason ?? null,
  };
}
