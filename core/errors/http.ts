/**
 * The one HTTP-status table, and the network codes beside it: how an HTTP failure maps onto the
 * taxonomy for every HTTP client of the house (the LLM providers, `http.get`, MCP servers, the alert
 * webhook). The table gives the code, the code its kind (`kindOf`); the caller writes the message and
 * says whose request it was, which is what 401 and 403 turn on (docs/ARCHITECTURE.md#the-error-taxonomy).
 */
import { kindOf, normalizedError, type ErrorCode, type NormalizedError } from './index';

/**
 * Who asked for a request, which decides what a refused credential (401, 403) means. `worker`: the
 * worker's own request (its LLM provider, an MCP server or webhook of the configuration), made with the
 * operator's credential or to an endpoint only a human can change: E_AUTH, fatal. `model`: a URL the
 * model chose (`http.get`), sent with no credential of ours: EACCES, pain, since the model can choose
 * another.
 */
export type RequestedBy = 'worker' | 'model';

/**
 * The taxonomy code of an HTTP failure status (its kind is the code's own):
 *
 * | status | code | kind |
 * |---|---|---|
 * | 408 | ETIMEDOUT | transient |
 * | 409, 5xx | E_UNAVAILABLE | transient |
 * | 429 | E_RATE_LIMIT | transient |
 * | 401, 403 | E_AUTH (`worker`) / EACCES (`model`) | fatal / execution |
 * | 404, 410 | ENOENT | execution |
 * | any other | EINVAL | execution |
 *
 * 409 is retried: a GET is safe to repeat, and the OpenAI and Anthropic SDKs retry 409 (a lock
 * timeout) too; a conflict that does not clear becomes pain when the retries run out.
 *
 * ```ts
 * httpStatusCode(409, 'model')  // 'E_UNAVAILABLE'
 * httpStatusCode(401, 'worker') // 'E_AUTH'
 * httpStatusCode(401, 'model')  // 'EACCES'
 * ```
 */
export function httpStatusCode(status: number, requestedBy: RequestedBy): ErrorCode {
  if (status === 408) return 'ETIMEDOUT';
  if (status === 429) return 'E_RATE_LIMIT';
  if (status === 409 || status >= 500) return 'E_UNAVAILABLE';
  if (status === 401 || status === 403) return requestedBy === 'worker' ? 'E_AUTH' : 'EACCES';
  if (status === 404 || status === 410) return 'ENOENT';
  return 'EINVAL';
}

/**
 * Classify the failure status of a request the worker made (an LLM provider, the alert webhook) with
 * the table above; the message is `HTTP <status>: <message>`.
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
  let code = httpStatusCode(status, 'worker');
  if (e.credentialRejected && kindOf(code) !== 'transient') code = 'E_AUTH';
  if (code !== 'E_AUTH') return normalizedError({ code, message, source, suggestion: e.suggestion });
  const what = status === 403 ? 'is not allowed to use this model or endpoint' : 'was rejected';
  return normalizedError({
    code,
    source,
    message: e.credential ? `${message} (${e.credential} ${what})` : message,
    suggestion:
      e.suggestion ??
      (e.credential
        ? `Check ${e.credential} on the worker, then unlock the agent.`
        : 'Check the credential for this provider (API key or Application Default Credentials).'),
  });
}

/**
 * Node's and undici's network failure codes, each with its taxonomy code: the one table for every HTTP
 * client, as the status table is. ENOTFOUND (the name does not exist) is ENOENT, an execution error
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

/**
 * The taxonomy code of a network failure (Node's code, or undici's on the `cause` chain), if it is one.
 *
 * ```ts
 * networkCodeOf(new TypeError('fetch failed', { cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }) })) // 'ECONNREFUSED'
 * ```
 */
export function networkCodeOf(err: unknown): ErrorCode | undefined {
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
export function retryDelayWithin(
  retryAfterMs: number | undefined,
  maximumIntervalMs: number | undefined,
): number | undefined {
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
