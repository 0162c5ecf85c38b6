/**
 * Reading activity failures inside the workflow (the family's map is in core/errors/index.ts): facts
 * come from the NormalizedError that the activity boundary put in the failure's details
 * (`activities/failures.ts`), never from message text.
 */
import { RetryState, TimeoutType } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import { normalizedError, toErrorCode, type NormalizedError } from '../core/errors';

function isNormalizedError(x: unknown): x is NormalizedError {
  const e = x as Partial<NormalizedError> | undefined;
  return !!e && typeof e.code === 'string' && typeof e.message === 'string' && typeof e.kind === 'string';
}

/** The facts of a failed activity, and whether Temporal gave up retrying a transient error. */
export function factsOf(err: unknown, source: string): { error: NormalizedError; retriesExhausted: boolean } {
  const activity = err instanceof ActivityFailure ? err : undefined;
  const cause = activity?.cause ?? err;
  const retriesExhausted =
    activity !== undefined &&
    (activity.retryState === RetryState.MAXIMUM_ATTEMPTS_REACHED || activity.retryState === RetryState.TIMEOUT);
  if (cause instanceof ApplicationFailure) {
    const detail = cause.details?.[0];
    const error = isNormalizedError(detail)
      ? detail
      : normalizedError({ code: toErrorCode(cause.type), message: cause.message, source });
    return { error, retriesExhausted };
  }
  if (cause instanceof TimeoutFailure) {
    return {
      error: normalizedError({
        code: 'ETIMEDOUT',
        kind: 'transient',
        source,
        message: `timed out (${cause.timeoutType})`,
      }),
      retriesExhausted,
    };
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  return { error: normalizedError({ code: 'E_INTERNAL', kind: 'fatal', source, message }), retriesExhausted };
}

/**
 * True when an activity failed because its worker stopped heartbeating: the worker died (or froze)
 * mid-call. That is not the call's failure, so it is neither pain nor a spent retry (the task re-runs it).
 */
export function isWorkerLoss(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === TimeoutType.HEARTBEAT
  );
}
