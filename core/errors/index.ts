/**
 * The error family (docs/ARCHITECTURE.md#the-error-taxonomy): every failure as facts, with one code and
 * one kind, decided in this folder and nowhere else.
 *
 * - This file: the taxonomy. The codes, their kinds (`execution` is pain fed to the model, `transient`
 *   is retried by Temporal, `fatal` stops the agent), `NormalizedError` and `ToolExecutionResult`; and
 *   it re-exports `./request`.
 * - `request.ts`: `RequestError` (InvalidArgument, ConfigError, Refused, NotFound): what a caller did
 *   wrong. Its type survives Temporal and becomes an HTTP status (api/app.ts) or an exit code (cli/).
 * - `http.ts`: the one HTTP-status table (`httpStatusCode`), for the LLM providers, `http.get`, MCP
 *   servers and the alert webhook; network error codes; `Retry-After`.
 * - `activity.ts`: what activities throw (`ActivityError`: `ToolError`, `LlmError`) and how a tool's
 *   thrown Node error becomes a NormalizedError.
 *
 * The workflows use this file and `./request`; import `./http` and `./activity` by path, so a workflow
 * never evaluates them (every new workflow evaluates its modules afresh: workers/module-graph.test.ts).
 * core/ does not import Temporal, so the crossing is beside the code that crosses, once each way:
 * `activities/failures.ts` makes a NormalizedError an `ApplicationFailure` (type: the code, first
 * detail: the error) and `workflows/activity-facts.ts` reads it back. An edge's own errors stay at that
 * edge and are translated where they are caught: a blob store's `BlobError` (E_BLOB_MISSING or a
 * transient failure, in `withStore`), the HTTP API's `AuthError` (401, 403), the CLI's exit codes.
 */
import type { StoredMessage } from '../llm';

export * from './request';

/** How the system responds to a failure: fed back as pain, retried, or stops the agent. */
export type ErrorKind = 'execution' | 'transient' | 'fatal';

/** Node-style codes where Node has one, `E_*` otherwise. */
export const ERROR_CODES = [
  'EPERM',
  'EACCES',
  'ENOENT',
  'EISDIR',
  'ENOTDIR',
  'EEXIST',
  'EINVAL',
  'ETIMEDOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EAI_AGAIN',
  'ENOMEM',
  'E_UNKNOWN_TOOL',
  'E_INVALID_JSON',
  'E_SCHEMA',
  'E_RATE_LIMIT',
  'E_UNAVAILABLE',
  'E_OUTPUT_TOO_LARGE',
  /** A sandboxed program hit one of the worker's resource limits (processes, memory, CPU, file size, disk). */
  'E_LIMIT',
  'E_AUTH',
  'E_INTERNAL',
  /** A tool reported that it failed (a user's tool threw, an MCP tool answered isError). */
  'E_TOOL_FAILED',
  'E_SKIPPED',
  /** A call that did not run for want of approval: a rule or a human denied it, or nobody decided in time. */
  'E_DENIED',
  /** A transcript blob the history refers to is not in the content store. */
  'E_BLOB_MISSING',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** A failure as the Core reports it: facts only, no interpretation (that is the Guide's job). */
export interface NormalizedError {
  code: ErrorCode;
  message: string;
  /** Id of the component that raised it, e.g. `fs.read`. */
  source: string;
  /** A system-level technical suggestion, e.g. the retry history or the permitted roots. */
  suggestion?: string;
  kind: ErrorKind;
}

/** The seeds' ToolExecutionResult: every tool outcome, success or failure, in one shape. */
export interface ToolExecutionResult {
  success: boolean;
  data?: unknown;
  error?: NormalizedError;
  /** With the transcript store: the result as the tool message the LLM will see, stored (no `data`). */
  message?: StoredMessage;
}

const TRANSIENT = new Set<string>([
  'ETIMEDOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EAI_AGAIN',
  'E_RATE_LIMIT',
  'E_UNAVAILABLE',
]);
const FATAL = new Set<string>(['ENOMEM', 'E_AUTH', 'E_INTERNAL', 'E_BLOB_MISSING']);

/**
 * The default kind of a code: transient codes are retried, fatal ones stop the agent, the rest are pain.
 *
 * ```ts
 * kindOf('ECONNRESET') // 'transient'
 * kindOf('EPERM')      // 'execution'
 * ```
 */
export function kindOf(code: string): ErrorKind {
  if (TRANSIENT.has(code)) return 'transient';
  if (FATAL.has(code)) return 'fatal';
  return 'execution';
}

/** Narrow an unknown string to a known code, falling back to `fallback`. */
export function toErrorCode(code: unknown, fallback: ErrorCode = 'E_INTERNAL'): ErrorCode {
  return typeof code === 'string' && (ERROR_CODES as readonly string[]).includes(code) ? (code as ErrorCode) : fallback;
}

/**
 * Build a normalized error; the kind defaults to the code's own.
 *
 * ```ts
 * normalizedError({ code: 'ENOENT', message: 'no such file', source: 'fs.read' })
 * ```
 */
export function normalizedError(e: {
  code: ErrorCode;
  message: string;
  source: string;
  suggestion?: string;
  kind?: ErrorKind;
}): NormalizedError {
  const out: NormalizedError = { code: e.code, message: e.message, source: e.source, kind: e.kind ?? kindOf(e.code) };
  if (e.suggestion !== undefined) out.suggestion = e.suggestion;
  return out;
}

/** A failed ToolExecutionResult. */
export function failure(error: NormalizedError): ToolExecutionResult {
  return { success: false, error };
}

/** A successful ToolExecutionResult. */
export function success(data: unknown): ToolExecutionResult {
  return { success: true, data };
}
