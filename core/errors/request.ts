/**
 * Errors a caller can act on: a bad request, a refusal, an unknown id. Each carries a `type` that
 * survives the trip through Temporal (the workflow's update validators turn it into an
 * `ApplicationFailure` of the same type) so a client tells a bad request (HTTP 400, exit 64) from a
 * refusal (409, exit 2) and from what only an admin may do (403, exit 2) by type, never by message text. Modelled on sdk-typescript's `failure.ts`: one
 * base class with a cause, named subclasses, marker-based checks.
 */

/** The failure types clients map onto status codes. */
export const REQUEST_ERROR_TYPES = ['InvalidArgument', 'Refused', 'NotFound', 'PermissionDenied'] as const;
export type RequestErrorType = (typeof REQUEST_ERROR_TYPES)[number];

const MARKER = Symbol.for('openstarry.RequestError');

/**
 * Base of the family.
 *
 * ```ts
 * try { parseSubmitTask(raw); } catch (e) { if (isRequestError(e)) console.log(e.type, e.message); }
 * ```
 */
export class RequestError extends Error {
  readonly [MARKER] = true;
  constructor(
    readonly type: RequestErrorType,
    message: string,
    options?: { cause?: unknown; issues?: readonly string[] },
  ) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = type;
    this.issues = options?.issues ?? [];
  }
  /** One line per invalid field (`path: message`), when the error comes from a schema. */
  readonly issues: readonly string[];
}

/** The request is malformed: a field is missing, of the wrong type or out of bounds. */
export class InvalidArgumentError extends RequestError {
  constructor(message: string, options?: { cause?: unknown; issues?: readonly string[] }) {
    super('InvalidArgument', message, options);
  }
}

/** A configuration (file, `--llm`, guide, config object) is invalid: an InvalidArgument that says where. */
export class ConfigError extends InvalidArgumentError {
  constructor(message: string, options?: { cause?: unknown; issues?: readonly string[] }) {
    super(message, options);
    this.name = 'ConfigError';
  }
}

/** The request is well formed but the agent refuses it in its current state (locked, duplicate id). */
export class RefusedError extends RequestError {
  constructor(message: string, options?: { cause?: unknown; issues?: readonly string[] }) {
    super('Refused', message, options);
  }
}

/**
 * The request is well formed but asks for what only an admin may do (a task's config that loosens its
 * agent's limits, core/limits.ts): HTTP 403 whatever the caller's role, since an admin does it another way.
 */
export class PermissionDeniedError extends RequestError {
  constructor(message: string, options?: { cause?: unknown; issues?: readonly string[] }) {
    super('PermissionDenied', message, options);
  }
}

/** No such agent or task. */
export class NotFoundError extends RequestError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('NotFound', message, options);
  }
}

/** True for any error of the family, even across realms (the workflow sandbox, a second copy of the module). */
export function isRequestError(err: unknown): err is RequestError {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[MARKER] === true;
}

/** Narrow a failure type read from Temporal back to the family's, or undefined. */
export function requestErrorType(type: unknown): RequestErrorType | undefined {
  return (REQUEST_ERROR_TYPES as readonly unknown[]).includes(type) ? (type as RequestErrorType) : undefined;
}
