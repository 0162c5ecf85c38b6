/**
 * The activity boundary, where a NormalizedError becomes a Temporal failure (the family's map is in
 * core/errors/index.ts). Transient errors are retryable (Temporal's retry policy backs off;
 * `Retry-After` becomes the next delay); execution and fatal errors are not retried.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { NormalizedError } from '../core/errors';
import { retryDelayWithin } from '../core/errors/http';

/**
 * Throw `error` as an ApplicationFailure whose `type` is the error code and whose first detail is the
 * NormalizedError itself, so the workflow reads facts, never message text.
 *
 * ```ts
 * throwAsFailure(normalizedError({ code: 'E_RATE_LIMIT', message: '429', source: 'llm' }), { retryAfterMs: 1000 });
 * ```
 */
export function throwAsFailure(error: NormalizedError, opts: { retryAfterMs?: number } = {}): never {
  throw ApplicationFailure.create({
    type: error.code,
    // Node's own messages already start with their code ("EPERM: operation not permitted…"): never say it twice.
    message: error.message.startsWith(`${error.code}:`) ? error.message : `${error.code}: ${error.message}`,
    nonRetryable: error.kind !== 'transient',
    details: [error],
    nextRetryDelay: error.kind === 'transient' && opts.retryAfterMs !== undefined ? opts.retryAfterMs : undefined,
  });
}

/**
 * Run an activity body so that a `Retry-After` it reports never exceeds the retry policy's maximum
 * interval (`maximumIntervalMs`, from the request the workflow sent).
 */
export async function withinRetryPolicy<T>(maximumIntervalMs: number | undefined, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ApplicationFailure) || typeof err.nextRetryDelay !== 'number') throw err;
    const delay = retryDelayWithin(err.nextRetryDelay, maximumIntervalMs);
    if (delay === err.nextRetryDelay) throw err;
    throw ApplicationFailure.create({
      type: err.type ?? undefined,
      message: err.message,
      nonRetryable: err.nonRetryable ?? undefined,
      details: err.details ?? undefined,
      nextRetryDelay: delay,
    });
  }
}
