/**
 * The agent's priority inbox (seeds: Priority Event Queue): lower number first, FIFO within a
 * priority. Priority 0 is reserved for SYSTEM_HALT, which never waits in the inbox: it is handled on
 * arrival. Plain data, so it passes through workflow state and continue-as-new unchanged.
 */
import type { TaskConfig } from './config';

/** Priorities a task may have; 0 is the kill switch's alone. */
export const MIN_TASK_PRIORITY = 1;
export const MAX_TASK_PRIORITY = 9;
export const DEFAULT_TASK_PRIORITY = 5;

/**
 * Temporal's task-queue priority (`priorityKey`: 1 goes first, 3 when none is set). On saturated workers
 * every workflow task waits its turn on the server: an agent's (a submit, a task's result) go before its
 * tasks' ticks, so the live state does not wait behind them; a halted agent and its running task go
 * before every other agent, so the kill switch does not wait behind a thousand submits
 * (`AgentClient.halt` raises them; `unlock` lowers the agent back). docs/BENCHMARKS.md has the figures.
 */
export const QUEUE_PRIORITY = { halt: 1, agent: 2, task: 3 } as const;

export interface QueuedTask {
  taskId: string;
  goal: string;
  priority: number;
  /** Arrival order, for FIFO within a priority. */
  seq: number;
  /** The config the task was submitted with, when it differs from the agent's (its `safety`: the limits it gives). */
  config?: TaskConfig;
  /** The submitter's trace context, when it sent one: the task's trace links to it. */
  traceparent?: string;
}

export interface PriorityInbox {
  items: QueuedTask[];
  nextSeq: number;
}

export function emptyInbox(): PriorityInbox {
  return { items: [], nextSeq: 1 };
}

/**
 * Add a task; returns the new inbox (the input is not changed).
 *
 * ```ts
 * let inbox = enqueue(emptyInbox(), { taskId: 't1', goal: 'x', priority: 5 });
 * ```
 * @throws RangeError when the priority is not a whole number in 1..9.
 */
export function enqueue(inbox: PriorityInbox, task: Omit<QueuedTask, 'seq'>): PriorityInbox {
  if (!Number.isInteger(task.priority) || task.priority < MIN_TASK_PRIORITY || task.priority > MAX_TASK_PRIORITY) {
    throw new RangeError(
      `priority must be a whole number from ${MIN_TASK_PRIORITY} to ${MAX_TASK_PRIORITY} (0 is reserved for SYSTEM_HALT), got ${task.priority}`,
    );
  }
  return { items: [...inbox.items, { ...task, seq: inbox.nextSeq }], nextSeq: inbox.nextSeq + 1 };
}

/** The items in the order they will run. */
export function ordered(inbox: PriorityInbox): QueuedTask[] {
  return [...inbox.items].sort((a, b) => a.priority - b.priority || a.seq - b.seq);
}

/** Take the next task to run, if any. */
export function dequeue(inbox: PriorityInbox): { task?: QueuedTask; inbox: PriorityInbox } {
  const [task] = ordered(inbox);
  if (!task) return { inbox };
  return { task, inbox: { ...inbox, items: inbox.items.filter((t) => t.seq !== task.seq) } };
}

/** Empty the inbox, returning what was in it in run order (the kill switch records them as cancelled). */
export function clear(inbox: PriorityInbox): { cleared: QueuedTask[]; inbox: PriorityInbox } {
  return { cleared: ordered(inbox), inbox: { ...inbox, items: [] } };
}
