/**
 * The agent's runs (docs/ARCHITECTURE.md#workflows): the task running now, with what its progress reports
 * said, and the task a breaker suspended, which blocks the inbox until an unlock resumes it (from its
 * checkpoint) or drops it. Plain data in the agent's `AgentData`; the functions change the part they are given.
 */
import type { AgentConfig } from '../config';
import type { QueuedTask } from '../priority-inbox';
import type { SafetyCounters } from '../safety-counters';
import type { TaskCheckpoint } from '../types';

export interface RunningTask {
  task: QueuedTask;
  workflowId: string;
  tick: number;
  /** Tokens this run has used so far (from the task's progress reports). */
  runTokens: number;
  /** Its cached input tokens and cost so far, likewise (when there are some). */
  runCachedInputTokens?: number;
  runCostUsd?: number;
  /** Human messages forwarded to this run (bounded by LIMITS.messagesPerRun). */
  messages?: number;
  /** The task's trace id, from its progress reports when its worker traces. */
  traceId?: string;
}

export interface SuspendedTask {
  task: QueuedTask;
  workflowId: string;
  checkpoint: TaskCheckpoint;
}

/** What to start next: a queued task, or a suspended one to resume, and the config it runs with. */
export interface NextRun {
  task: QueuedTask;
  workflowId: string;
  config: AgentConfig;
  checkpoint?: TaskCheckpoint;
}

/** The running task and the suspended one. */
export interface RunsData {
  current?: RunningTask;
  suspended?: SuspendedTask;
  /** An unlock asked to resume the suspended task: it runs next, before the inbox. */
  resumeRequested: boolean;
}

/** What a running task's progress report says (`taskProgress`). */
export interface ProgressReport {
  taskId: string;
  tick: number;
  runTokens: number;
  runCachedInputTokens?: number;
  runCostUsd?: number;
  counters: SafetyCounters;
  lastErrorCode?: string;
  traceId?: string;
}

/**
 * True when a run may start, given whether the agent is locked and how many tasks wait: nothing runs
 * and it is not locked; then a resume that was asked for, else the inbox unless a task is suspended.
 */
export function canStart(d: RunsData, locked: boolean, queued: number): boolean {
  if (d.current || locked) return false;
  return (d.resumeRequested && !!d.suspended) || (!d.suspended && queued > 0);
}

/** Take the suspended task when its resume was asked for: it leaves `suspended`. */
export function takeResume(d: RunsData): Omit<NextRun, 'config'> | undefined {
  const s = d.suspended;
  if (!d.resumeRequested || !s) return undefined;
  d.suspended = undefined;
  d.resumeRequested = false;
  return { task: s.task, workflowId: s.workflowId, checkpoint: s.checkpoint };
}

/** The run starts: from its checkpoint's tick when it resumes, else 0. */
export function startRun(d: RunsData, next: Omit<NextRun, 'config'>): void {
  d.current = { task: next.task, workflowId: next.workflowId, tick: next.checkpoint?.ticks ?? 0, runTokens: 0 };
}

/** Take the running task's report; returns false (and changes nothing) when it is not the running task's. */
export function progressRun(d: RunsData, p: ProgressReport): boolean {
  const c = d.current;
  if (!c || c.task.taskId !== p.taskId) return false;
  c.tick = p.tick;
  c.runTokens = p.runTokens;
  if (p.runCachedInputTokens !== undefined) c.runCachedInputTokens = p.runCachedInputTokens;
  if (p.runCostUsd !== undefined) c.runCostUsd = p.runCostUsd;
  if (p.traceId) c.traceId = p.traceId;
  return true;
}

/** The run ended: nothing runs. Returns the run that ended. */
export function endRun(d: RunsData): RunningTask | undefined {
  const running = d.current;
  d.current = undefined;
  return running;
}

/** A run that ended SUSPENDED waits, with its checkpoint, for an unlock to decide it. */
export function suspendRun(d: RunsData, running: RunningTask, checkpoint: TaskCheckpoint): void {
  d.suspended = { task: running.task, workflowId: running.workflowId, checkpoint };
}

/** A halt: no resume runs until an unlock asks again. */
export function forgetResume(d: RunsData): void {
  d.resumeRequested = false;
}

/**
 * An unlock decides the suspended task: resumed with a fresh tick allowance, or dropped (its caller ends
 * it ABORTED). Returns the task and what the unlock says of it; nothing when none is suspended.
 */
export function decideSuspended(
  d: RunsData,
  resume: boolean,
): { taskId: string; resumed: boolean; note: string } | undefined {
  const s = d.suspended;
  if (!s) return undefined;
  const taskId = s.task.taskId;
  if (resume) {
    d.resumeRequested = true;
    return { taskId, resumed: true, note: `task ${taskId} resumes with a fresh tick allowance` };
  }
  d.suspended = undefined;
  return {
    taskId,
    resumed: false,
    note: `task ${taskId} ended ABORTED (transcript kept); pass --resume to continue it instead`,
  };
}

/** True when `taskId` is the running or the suspended task's. */
export function holdsRun(d: RunsData, taskId: string): boolean {
  return d.current?.task.taskId === taskId || d.suspended?.task.taskId === taskId;
}
