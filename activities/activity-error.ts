/**
 * The one error family of the activities: an Error that carries the NormalizedError it stands for (its
 * `code`, the facts), the `Retry-After` of a transient error that knows when to come back, and the
 * `cause` it was made from. Tools throw `ToolError`, LLM providers `LlmError`; both are turned into a
 * Temporal failure once, by `throwAsFailure` (activities/failures.ts). Modelled on sdk-typescript's
 * failure.ts: one base with a cause, named subclasses, static factories and marker-based checks.
 */
import { normalizedError, type ErrorCode, type NormalizedError } from '../core/errors';

const ACTIVITY_ERROR = Symbol.for('openstarry.ActivityError');

/** What `normalizedError` takes: code, message, source and the optional kind and suggestion. */
export type ErrorFields = Parameters<typeof normalizedError>[0];

/**
 * The base of the family. Use a subclass (`ToolError`, `LlmError`) so a log says which side failed.
 *
 * ```ts
 * throw LlmError.of({ code: 'E_RATE_LIMIT', message: 'HTTP 429', source: 'llm openai' }, { retryAfterMs: 2000 });
 * ```
 */
export class ActivityError extends Error {
  readonly [ACTIVITY_ERROR] = true;
  override readonly name: string = 'ActivityError';

  constructor(
    readonly error: NormalizedError,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(error.message, options);
  }

  /** The taxonomy code (`error.code`). */
  get code(): ErrorCode {
    return this.error.code;
  }

  /** Marker-based check, so it holds across module copies (jest registries, bundles). */
  static isActivityError(err: unknown): err is ActivityError {
    return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[ACTIVITY_ERROR] === true;
  }
}

/**
 * An LLM provider's failure, already classified (HTTP status, a bad answer, a model process that died).
 *
 * ```ts
 * throw LlmError.of({ code: 'EINVAL', kind: 'execution', source: 'llm gemini', message: 'finished with SAFETY' });
 * ```
 */
export class LlmError extends ActivityError {
  override readonly name: string = 'LlmError';

  /** Build from the fields of `normalizedError` (the kind defaults to the code's own). */
  static of(e: ErrorFields, opts: { retryAfterMs?: number; cause?: unknown } = {}): LlmError {
    return new LlmError(normalizedError(e), opts.retryAfterMs, { cause: opts.cause });
  }
}
