/**
 * Tool activities on a task queue of their own (`STARRY_TOOL_TASK_QUEUE`, docs/ARCHITECTURE.md#the-worker):
 * how long a call may wait for a tool worker to pick it up, and what the task says when none does.
 */
import { TimeoutType, type Duration } from '@temporalio/common';
import { ActivityFailure, TimeoutFailure } from '@temporalio/workflow';
import { normalizedError, type NormalizedError } from '../core/errors';

/**
 * The submit check and a task's listing wait this long for a tool worker: with none polling, the submit
 * is refused and the task fails within seconds instead of waiting forever.
 */
export const TOOL_QUEUE_START_TIMEOUT: Duration = '10 seconds';

/** True when an activity failed because no worker picked it up in time (its schedule-to-start timeout). */
export function notPicked(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === TimeoutType.SCHEDULE_TO_START
  );
}

/** What a submit or a task says when no tool worker picked its call up. */
export function noToolWorker(queue: string): string {
  return `no tool worker picked up the call on task queue ${queue}: start one (\`starry worker --tools\` with STARRY_TOOL_TASK_QUEUE=${queue}), or unset STARRY_TOOL_TASK_QUEUE on the workers to run the tools in the workflow worker`;
}

/** What a task says when its tool workers answer but stayed too busy to pick its call up. */
export function busyToolWorkers(queue: string, minutes: number): string {
  return `the tool workers on task queue ${queue} are running but none picked up the call in ${minutes} minutes: add tool workers (\`starry worker --tools\`) or give them more slots (STARRY_MAX_CONCURRENT_TOOL_CALLS)`;
}

/**
 * The task's error when no tool worker picked its call up (none polls, or all stayed busy): fatal, the
 * fix in its suggestion.
 */
export function noToolWorkerError(queue: string, source: string, busyMinutes?: number): NormalizedError {
  return normalizedError({
    code: 'E_UNAVAILABLE',
    kind: 'fatal',
    source,
    message: `E_UNAVAILABLE: ${busyMinutes ? busyToolWorkers(queue, busyMinutes) : noToolWorker(queue)}`,
    suggestion: busyMinutes
      ? `Add tool workers on ${queue} or raise STARRY_MAX_CONCURRENT_TOOL_CALLS on them, then submit the task again.`
      : `Start \`starry worker --tools\` with STARRY_TOOL_TASK_QUEUE=${queue}, then submit the task again.`,
  });
}
