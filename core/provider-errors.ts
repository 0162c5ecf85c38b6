/**
 * How a provider's failure (HTTP status or network error) maps to the three kinds of pain, shared by
 * every LLM provider and by `http.get`: 408/409/429/5xx and network errors are transient, 401/403 are
 * fatal (a credential is wrong; retrying cannot help), other 4xx are plain failures that are not retried.
 */
import { normalizedError, type ErrorCode, type NormalizedError } from './errors';

/**
 * Classify an HTTP status.
 *
 * ```ts
 * classifyHttpStatus({ status: 429, message: 'slow down', source: 'llm gemini' }).kind // 'transient'
 * ```
 */
export function classifyHttpStatus(e: {
  status: number;
  message: string;
  source: string;
  suggestion?: string;
  /**
   * Which credential the request carried, e.g. "the API key in OPENAI_API_KEY". On 401/403 it is named
   * in the message itself, because the message is what reaches the agent's lock reason.
   */
  credential?: string;
  /**
   * The provider said in structured form that the credential is bad, whatever the status (Google
   * answers an invalid API key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID): classified as 401.
   */
  credentialRejected?: boolean;
}): NormalizedError {
  const { status, source } = e;
  const message = `HTTP ${status}: ${e.message}`;
  const make = (code: ErrorCode, kind: NormalizedError['kind'], suggestion = e.suggestion, text = message) =>
    normalizedError({ code, kind, message: text, source, suggestion });
  if (status === 429) return make('E_RATE_LIMIT', 'transient');
  if (status === 408) return make('ETIMEDOUT', 'transient');
  if (status === 409 || status >= 500) return make('E_UNAVAILABLE', 'transient');
  if (status === 401 || status === 403 || e.credentialRejected) {
    const what = status === 403 ? 'is not allowed to use this model or endpoint' : 'was rejected';
    return make(
      'E_AUTH',
      'fatal',
      e.suggestion ??
        (e.credential
          ? `Check ${e.credential} on the worker, then unlock the agent.`
          : 'Check the credential for this provider (API key or Application Default Credentials).'),
      e.credential ? `${message} (${e.credential} ${what})` : message,
    );
  }
  if (status === 404) return make('ENOENT', 'execution');
  return make('EINVAL', 'execution');
}

/**
 * Node's and undici's network failure codes, each with its taxonomy code: the one table for the LLM
 * providers and the http.get tool. ENOTFOUND (the name does not exist) is ENOENT, an execution error
 * the model can fix by choosing another host; EAI_AGAIN (the resolver could not answer) is transient.
 */
export const NETWORK_CODES: Readonly<Record<string, ErrorCode>> = {
  ECONNREFUSED: 'ECONNREFUSED',
  ECONNRESET: 'ECONNRESET',
  EPIPE: 'ECONNRESET',
  UND_ERR_SOCKET: 'ECONNRESET',
  ETIMEDOUT: 'ETIMEDOUT',
  UND_ERR_CONNECT_TIMEOUT: 'ETIMEDOUT',
  UND_ERR_HEADERS_TIMEOUT: 'ETIMEDOUT',
  UND_ERR_BODY_TIMEOUT: 'ETIMEDOUT',
  EAI_AGAIN: 'EAI_AGAIN',
  ENOTFOUND: 'ENOENT',
};

/**
 * Classify a thrown network error (Node's `err.code` or undici's `err.cause.code`), or undefined when
 * it is not one.
 */
export function classifyNetworkError(err: unknown, source: string): NormalizedError | undefined {
  const code = networkCodeOf(err);
  if (!code) return undefined;
  const message = err instanceof Error ? err.message : String(err);
  return normalizedError({ code, kind: code === 'ENOENT' ? 'execution' : 'transient', message, source });
}

function networkCodeOf(err: unknown): ErrorCode | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES[code]) return NETWORK_CODES[code];
    e = (e as { cause?: unknown }).cause;
  }
  if (err instanceof TypeError && err.message === 'fetch failed') return 'ECONNRESET';
  return undefined;
}

/**
 * The next retry delay a failure asks for, within the retry policy's maximum interval. Temporal does
 * not bound `nextRetryDelay` by the policy, so without this a `Retry-After: 86400` would park the
 * task for a day.
 */
export function retryDelayWithin(retryAfterMs: number | undefined, maximumIntervalMs: number | undefined): number | undefined {
  if (retryAfterMs === undefined || maximumIntervalMs === undefined) return retryAfterMs;
  return Math.min(retryAfterMs, maximumIntervalMs);
}

/** Parse `Retry-After` (seconds or an HTTP date) or `retry-after-ms` into milliseconds. */
export function retryAfterMs(headers: { get(name: string): string | null }, nowMs: number): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const ra = headers.get('retry-after');
  if (!ra) return undefined;
  if (/^\d+(\.\d+)?$/.test(ra.trim())) return Math.max(0, Number(ra) * 1000);
  const date = Date.parse(ra);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
