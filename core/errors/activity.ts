/**
 * What activities throw, and how what a tool throws becomes a NormalizedError. `ActivityError` carries
 * the NormalizedError it stands for, the `Retry-After` of a transient error that knows when to come
 * back, and its `cause`; tools throw `ToolError`, LLM providers `LlmError`. The activity boundary turns
 * them into Temporal failures (`throwAsFailure`, activities/failures.ts). Modelled on sdk-typescript's
 * failure.ts: one base with a cause, named subclasses, static factories and marker-based checks.
 */
import { kindOf, normalizedError, toErrorCode, type ErrorCode, type NormalizedError } from './index';

const ACTIVITY_ERROR = Symbol.for('openstarry.ActivityError');
const TOOL_ERROR = Symbol.for('openstarry.ToolError');

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

/**
 * A tool's failure while it runs, thrown inside the tool implementations and turned into data (or a
 * Temporal failure) once, in activities/tools/index.ts. `retryAfterMs`: when a transient error may be
 * retried at the earliest (HTTP 429 `Retry-After`).
 *
 * ```ts
 * throw ToolError.of({ code: 'EPERM', message: 'EPERM: command not allowed', source: 'shell.run' });
 * ```
 */
export class ToolError extends ActivityError {
  readonly [TOOL_ERROR] = true;
  override readonly name: string = 'ToolError';

  /**
   * Build from the fields of `normalizedError`: the kind defaults to the code's own, the source to
   * the tool that throws it. `retryAfterMs`: when a transient error may be retried at the earliest.
   */
  static of(
    e: Omit<ErrorFields, 'source'> & { source?: string },
    opts: { retryAfterMs?: number; cause?: unknown } = {},
  ): ToolError {
    return new ToolError(normalizedError({ ...e, source: e.source ?? '' }), opts.retryAfterMs, { cause: opts.cause });
  }

  /** Marker-based check, so it holds across module copies (jest registries, bundles). */
  static is(err: unknown): err is ToolError {
    return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[TOOL_ERROR] === true;
  }
}

/**
 * Node error codes that have no entry in the taxonomy, mapped to the nearest one. Why each:
 * ELOOP/ENAMETOOLONG are malformed paths; EROFS is a permission fact; EMFILE/ENFILE/EBUSY/EAGAIN clear up
 * on their own, so they are retried. A full disk is not here: it needs an operator (see `OPERATOR_CODES`).
 */
const NODE_ALIASES: Record<string, ErrorCode> = {
  ELOOP: 'EINVAL',
  ENAMETOOLONG: 'EINVAL',
  ERR_INVALID_ARG_VALUE: 'EINVAL',
  ERR_INVALID_ARG_TYPE: 'EINVAL',
  EROFS: 'EACCES',
  ENOTEMPTY: 'EEXIST',
  EMFILE: 'E_UNAVAILABLE',
  ENFILE: 'E_UNAVAILABLE',
  EBUSY: 'E_UNAVAILABLE',
  EAGAIN: 'E_UNAVAILABLE',
};

/** Node codes no agent can work around: E_INTERNAL `fatal`, like running out of memory. */
const OPERATOR_CODES = new Set(['ENOSPC', 'EDQUOT']);

/** The `code` of a Node system error, if it has one. */
export function nodeCode(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** The message of anything thrown; duck-typed, since errors may come from another realm (undici, jest). */
export function messageOf(err: unknown): string {
  const message = typeof err === 'object' && err !== null ? (err as { message?: unknown }).message : undefined;
  return typeof message === 'string' ? message : String(err);
}

/**
 * Normalize anything a tool threw. A ToolError keeps its error. A Node system error keeps its code (or
 * the nearest alias) and the kind of that code. A system error with a code we do not model is still a
 * fact about this one operation, so it is E_INTERNAL of kind `execution` (the model hears about it and
 * may try something else). Only an error without any code (a TypeError, a broken assumption in our own
 * code) is E_INTERNAL `fatal`: an invariant broke and retrying or feeding it back would hide a bug.
 *
 * ```ts
 * normalizeThrown(Object.assign(new Error('x'), { code: 'ENOENT' }), 'fs.read') // { code: 'ENOENT', kind: 'execution', ... }
 * ```
 */
export function normalizeThrown(err: unknown, source: string, subject?: string): NormalizedError {
  if (ToolError.is(err)) return err.error.source ? err.error : { ...err.error, source };
  const raw = nodeCode(err);
  const message = messageOf(err);
  if (raw === undefined) {
    return normalizedError({
      code: 'E_INTERNAL',
      kind: 'fatal',
      source,
      message: `Internal error in ${source}: ${message}`,
    });
  }
  const code = NODE_ALIASES[raw] ?? toErrorCode(raw, 'E_INTERNAL');
  const kind = OPERATOR_CODES.has(raw) ? 'fatal' : code === 'E_INTERNAL' ? 'execution' : kindOf(code);
  // Node's messages name the syscall and the real path; the subject is what the model asked for.
  const text = subject !== undefined ? `${raw}: ${describeCode(raw, message)}, '${subject}'` : message;
  return normalizedError({ code, kind, source, message: text });
}

const DESCRIPTIONS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EISDIR: 'illegal operation on a directory',
  ENOTDIR: 'not a directory',
  EEXIST: 'file already exists',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ELOOP: 'too many symbolic links encountered',
  ENAMETOOLONG: 'name too long',
  ENOSPC: 'no space left on device',
};

function describeCode(code: string, fallback: string): string {
  return DESCRIPTIONS[code] ?? fallback.replace(new RegExp(`^${code}:\\s*`), '');
}

/** Turn any thrown value into a ToolError (for rethrowing with a normalized shape). */
export function toToolError(err: unknown, source: string, subject?: string): ToolError {
  return ToolError.is(err) ? err : new ToolError(normalizeThrown(err, source, subject), undefined, { cause: err });
}

/**
 * Normalize what a worker's own tool (or an MCP tool) threw. A ToolError, or an error with a code of
 * the taxonomy or of Node (also on its `cause`, as `fetch` reports a refused connection), is read like
 * the built-in tools'; a timeout is ETIMEDOUT (retried). Anything else is the tool telling the model it
 * failed: E_TOOL_FAILED, pain with the tool's message. Unlike in a built-in tool, a plain Error here is
 * a fact about this call (a city not found, an API's refusal), not a broken invariant of ours.
 *
 * ```ts
 * normalizeOwnThrown(new Error('no city named Atlantis'), 'weather.forecast')
 * // { code: 'E_TOOL_FAILED', kind: 'execution', message: 'weather.forecast failed: no city named Atlantis', ... }
 * ```
 */
export function normalizeOwnThrown(err: unknown, source: string): NormalizedError {
  if (ToolError.is(err) || nodeCode(err) !== undefined) return normalizeThrown(err, source);
  const cause = typeof err === 'object' && err !== null ? (err as { cause?: unknown }).cause : undefined;
  if (nodeCode(cause) !== undefined) {
    const inner = normalizeThrown(cause, source);
    return { ...inner, message: `${source} failed: ${messageOf(err)} (${inner.message})` };
  }
  const name = typeof err === 'object' && err !== null ? (err as { name?: unknown }).name : undefined;
  if (name === 'TimeoutError')
    return normalizedError({ code: 'ETIMEDOUT', source, message: `${source} timed out: ${messageOf(err)}` });
  return normalizedError({
    code: 'E_TOOL_FAILED',
    kind: 'execution',
    source,
    message: `${source} failed: ${messageOf(err)}`,
  });
}
