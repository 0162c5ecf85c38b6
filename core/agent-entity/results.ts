/**
 * What an agent keeps of its tasks (docs/ARCHITECTURE.md#workflows): the results of its newest ones,
 * compact, and the tasks a SYSTEM_HALT cleared from its inbox before they started, kept whole so they can
 * be submitted again. Plain data in the agent's `AgentData`; the functions change the part they are given.
 */
import { fitResult } from '../compact';
import type { CancelledTask } from '../contract';
import { LIMITS } from '../payloads';
import type { QueuedTask } from '../priority-inbox';
import type { AgentState, TaskResult } from '../types';

/** Results and unlock records kept in state (the newest); older ones live in the task workflows' histories. */
export const KEEP_RECENT = LIMITS.keptResults;

/** The newest `KEEP_RECENT` of a list. */
export const keepRecent = <T>(items: T[]): T[] => items.slice(-KEEP_RECENT);

/** The agent's record of its tasks. */
export interface ResultsData {
  /** Tasks a halt cleared before they started, with their input, oldest first (the newest `LIMITS.cancelledTasks`). */
  cancelledTasks: CancelledTask[];
  /** The newest tasks' results, one per task id, compact (`LIMITS.keptResultBytes` each). */
  tasks: TaskResult[];
}

/**
 * Keep a task's result, in place of an earlier one of the same task, compact: the full transcript lives
 * in the task workflow's own result and history.
 *
 * ```ts
 * recordResult(d, { ...result, outcome: 'ABORTED' }); // d.tasks.at(-1) is it
 * ```
 */
export function recordResult(d: ResultsData, result: TaskResult): void {
  d.tasks = keepRecent([
    ...d.tasks.filter((t) => t.taskId !== result.taskId),
    fitResult(result, LIMITS.keptResultBytes),
  ]);
}

/** End a suspended task ABORTED (unlock without resume): its kept result says so, when there is one. */
export function abortResult(d: ResultsData, taskId: string, agentState: AgentState): void {
  const previous = d.tasks.find((t) => t.taskId === taskId);
  if (previous) recordResult(d, { ...previous, outcome: 'ABORTED', agentState });
}

/** Record the tasks a halt by `by` cleared from the inbox, each with its input, so it can be resubmitted. */
export function cancelCleared(d: ResultsData, cleared: QueuedTask[], by: string): void {
  const reason = `cancelled by SYSTEM_HALT (${by}) before it started; resubmit it to run it`;
  const records = cleared.map((t): CancelledTask => ({
    taskId: t.taskId,
    goal: t.goal,
    priority: t.priority,
    reason,
    ...(t.config ? { config: t.config } : {}),
  }));
  d.cancelledTasks = [...d.cancelledTasks, ...records].slice(-LIMITS.cancelledTasks);
}

/** A cancelled task submitted again under its id is no longer cancelled. */
export function uncancel(d: ResultsData, taskId: string): void {
  d.cancelledTasks = d.cancelledTasks.filter((c) => c.taskId !== taskId);
}

/** The tick the latest task stopped at (0 before any), which a locked agent reports. */
export function lastTick(d: ResultsData): number {
  return d.tasks.at(-1)?.ticks ?? 0;
}
