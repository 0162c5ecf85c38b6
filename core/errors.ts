/**
 * The one error taxonomy (docs/ARCHITECTURE.md#the-error-taxonomy). Codes and kinds live here; the conversion to Temporal
 * failures happens once, at the activity boundary (`activities/failures.ts`).
 */

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

const TRANSIENT = new Set<string>(['ETIMEDOUT', 'ECONNREFUSED', 'ECONNRESET', 'EAI_AGAIN', 'E_RATE_LIMIT', 'E_UNAVAILABLE']);
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
}import type { StoredMessage } from './llm';

