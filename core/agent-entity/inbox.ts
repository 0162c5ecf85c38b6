/**
 * An agent's queue of tasks (docs/ARCHITECTURE.md#workflows): the priority inbox (`core/priority-inbox.ts`:
 * lower number first, first come first served within a priority), at most `LIMITS.queuedTasks` deep, and
 * the numbering of the tasks whose submitter chose no id. Plain data in the agent's `AgentData`; the
 * functions change the part they are given.
 */
import type { TaskConfig } from '../config';
import { RefusedError } from '../errors';
import { LIMITS } from '../payloads';
import {
  clear,
  dequeue,
  DEFAULT_TASK_PRIORITY,
  emptyInbox,
  enqueue,
  ordered,
  type PriorityInbox,
  type QueuedTask,
} from '../priority-inbox';

/** The queued tasks and the next task number. */
export interface InboxData {
  inbox: PriorityInbox;
  /** The number of the next `task-<n>` id the agent gives. */
  nextTaskNumber: number;
}

/** What a queued task is made of (a parsed submit). */
export interface TaskInput {
  goal: string;
  priority?: number;
  config?: TaskConfig;
  traceparent?: string;
}

/**
 * Refuse a task when the queue is full.
 *
 * @throws RefusedError saying how many wait.
 */
export function refuseFullInbox(d: InboxData, agentId: string): void {
  if (d.inbox.items.length >= LIMITS.queuedTasks) {
    throw new RefusedError(
      `agent ${agentId} already has ${d.inbox.items.length} tasks queued (the most it takes): submit again when some have run`,
    );
  }
}

/**
 * Check a task's priority before anything changes.
 *
 * @throws RangeError naming the bad priority.
 */
export function checkPriority(input: Pick<TaskInput, 'goal' | 'priority'>): void {
  enqueue(emptyInbox(), { taskId: 'check', goal: input.goal, priority: input.priority ?? DEFAULT_TASK_PRIORITY });
}

/**
 * The id of a new task: the one its submitter chose, else the next `task-<n>` that `taken` does not
 * hold (the numbering skips ids a caller chose, so two tasks never share a workflow id).
 */
export function taskIdFor(d: InboxData, chosen: string | undefined, taken: (taskId: string) => boolean): string {
  if (chosen !== undefined) return chosen;
  let taskId = `task-${d.nextTaskNumber++}`;
  while (taken(taskId)) taskId = `task-${d.nextTaskNumber++}`;
  return taskId;
}

/** Queue a task (checked already) under `taskId`; returns its place in the run order, 0 first. */
export function queueTask(d: InboxData, taskId: string, input: TaskInput): number {
  const task: Omit<QueuedTask, 'seq'> = { taskId, goal: input.goal, priority: input.priority ?? DEFAULT_TASK_PRIORITY };
  if (input.config) task.config = input.config;
  if (input.traceparent) task.traceparent = input.traceparent;
  d.inbox = enqueue(d.inbox, task);
  return inOrder(d).findIndex((t) => t.taskId === taskId);
}

/** Take the task that runs next, if any. */
export function takeQueued(d: InboxData): QueuedTask | undefined {
  const { task, inbox } = dequeue(d.inbox);
  if (task) d.inbox = inbox;
  return task;
}

/** Empty the queue (a halt): returns what was in it, in run order. */
export function clearInbox(d: InboxData): QueuedTask[] {
  const { cleared, inbox } = clear(d.inbox);
  d.inbox = inbox;
  return cleared;
}

/** The queued tasks in the order they will run. */
export function inOrder(d: InboxData): QueuedTask[] {
  return ordered(d.inbox);
}

/** True when a task of this id waits in the queue. */
export function isQueued(d: InboxData, taskId: string): boolean {
  return d.inbox.items.some((t) => t.taskId === taskId);
}
