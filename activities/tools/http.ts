/**
 * `http.get`: GET a URL on an allow-listed host with the global fetch. Redirects are followed by hand so
 * every hop is checked against the allow-list. A failure status is classified by the house's one table
 * (`httpStatusCode`) as a URL the model chose: 408, 409, 429 and 5xx are transient (retried by Temporal),
 * 401/403 are EACCES pain, other 4xx are pain with the status.
 */
import { kindOf } from '../../core/errors';
import { httpStatusCode, NETWORK_CODES, retryAfterMs } from '../../core/errors/http';
import type { ToolArgs } from '../../core/tools';
import { isHostAllowed } from '../../core/worker-policy';
import type { ToolContext } from './context';
import { ToolError, messageOf, nodeCode } from '../../core/errors/activity';

const SOURCE = 'http.get';
const MAX_REDIRECTS = 5;
const ERROR_BODY_CHARS = 200;

/** Result of `http.get`. `truncated` is true when the body was cut at `tools.maxOutputBytes`. */
export interface HttpResult {
  url: string;
  status: number;
  contentType: string | null;
  body: string;
  bytes: number;
  truncated: boolean;
}

/**
 * Fetch `url`. The body is cut at the output cap (there is no argument to ask for less, so a cut body
 * is more useful than an error). Cancellation (`ctx.signal`) rethrows the abort reason.
 *
 * ```ts
 * await httpGet({ url: 'https://api.github.com/zen' }, ctx) // { status: 200, body: '...', ... }
 * ```
 */
export async function httpGet(args: ToolArgs['http.get'], ctx: ToolContext): Promise<HttpResult> {
  let url = parseUrl(args.url);
  const timeout = AbortSignal.timeout(ctx.timeoutMs);
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, timeout]) : timeout;
  const attempt: Attempt = { ctx, timeout, signal };
  for (let hop = 0; ; hop++) {
    checkHost(url, ctx.tools.httpAllow);
    const response = await fetchOnce(url, attempt);
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location !== null) {
      await response.body?.cancel();
      if (hop >= MAX_REDIRECTS) {
        throw ToolError.of({
          code: 'EINVAL',
          source: SOURCE,
          message: `EINVAL: more than ${MAX_REDIRECTS} redirects from ${args.url}`,
        });
      }
      url = parseUrl(new URL(location, url).toString());
      continue;
    }
    const { text, bytes, truncated } = await readCapped(response, url, attempt);
    if (response.status >= 400) throw statusError(response, url, text);
    return {
      url: url.toString(),
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: text,
      bytes,
      truncated,
    };
  }
}

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw ToolError.of({
      code: 'EINVAL',
      source: SOURCE,
      message: `EINVAL: invalid URL: ${JSON.stringify(raw)}`,
      suggestion: 'Pass an absolute URL such as https://example.com/page.',
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw ToolError.of({
      code: 'EINVAL',
      source: SOURCE,
      message: `EINVAL: only http and https URLs are supported, got ${url.protocol}`,
    });
  }
  return url;
}

function checkHost(url: URL, allow: string[]): void {
  if (isHostAllowed(url, allow)) return;
  throw ToolError.of({
    code: 'EPERM',
    source: SOURCE,
    message: `EPERM: host not allowed: '${url.hostname}'`,
    suggestion: allow.length
      ? `Allowed hosts: ${allow.join(', ')}.`
      : 'No host is allowed: tools.httpAllow is empty in the agent config.',
  });
}

/** The signals of one http.get call: cancellation (from the activity) combined with our own timeout. */
interface Attempt {
  ctx: ToolContext;
  timeout: AbortSignal;
  signal: AbortSignal;
}

async function fetchOnce(url: URL, attempt: Attempt): Promise<Response> {
  try {
    return await fetch(url, { signal: attempt.signal, redirect: 'manual' });
  } catch (err) {
    throw networkError(err, url, attempt);
  }
}

/** Cancellation rethrows its reason; our own timeout is ETIMEDOUT; other failures are read from `cause`. */
function networkError(err: unknown, url: URL, { ctx, timeout }: Attempt): unknown {
  if (ctx.signal?.aborted) return ctx.signal.reason;
  // Asked of the signal, not the error: the error's class may come from another realm.
  if (timeout.aborted) {
    return ToolError.of({
      code: 'ETIMEDOUT',
      source: SOURCE,
      message: `ETIMEDOUT: GET ${url} took longer than ${ctx.timeoutMs} ms`,
    });
  }
  const cause = (err as { cause?: { errors?: unknown[] } } | undefined)?.cause;
  // Happy-eyeballs connects fail with an AggregateError whose members carry the codes.
  const raw = nodeCode(cause) ?? nodeCode(cause?.errors?.[0]);
  const code = raw !== undefined ? NETWORK_CODES[raw] : undefined;
  const detail = cause !== undefined ? messageOf(cause) : messageOf(err);
  if (code === 'ENOENT') {
    return ToolError.of({ code, source: SOURCE, message: `ENOENT: host not found: '${url.hostname}'` }, { cause: err });
  }
  // An unrecognised network failure (TLS, protocol) may clear up: retried, then reported as pain.
  return ToolError.of(
    {
      code: code ?? 'E_UNAVAILABLE',
      source: SOURCE,
      message: `${raw ?? 'E_UNAVAILABLE'}: GET ${url} failed: ${detail}`,
    },
    { cause: err },
  );
}

async function readCapped(
  response: Response,
  url: URL,
  attempt: Attempt,
): Promise<{ text: string; bytes: number; truncated: boolean }> {
  const cap = attempt.ctx.tools.maxOutputBytes;
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  let truncated = false;
  if (response.body) {
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const room = cap - bytes;
        if (value.length > room) {
          chunks.push(value.subarray(0, room));
          bytes = cap;
          truncated = true;
          await reader.cancel();
          break;
        }
        chunks.push(value);
        bytes += value.length;
      }
    } catch (err) {
      throw networkError(err, url, attempt);
    }
  }
  return { text: Buffer.concat(chunks).toString('utf8'), bytes, truncated };
}

function statusError(response: Response, url: URL, body: string): ToolError {
  const status = response.status;
  const snippet = body.trim().slice(0, ERROR_BODY_CHARS);
  const message = `HTTP ${status} ${response.statusText} from GET ${url}${snippet ? `: ${snippet}` : ''}`;
  const code = httpStatusCode(status, 'model');
  if (code === 'E_RATE_LIMIT') {
    const waitMs = retryAfterMs(response.headers, Date.now());
    return ToolError.of(
      {
        code,
        source: SOURCE,
        message,
        suggestion: waitMs !== undefined ? `The server asked to wait ${waitMs} ms.` : undefined,
      },
      { retryAfterMs: waitMs },
    );
  }
  if (kindOf(code) === 'transient') return ToolError.of({ code, source: SOURCE, message });
  // The request itself is wrong (or not allowed without a credential): the model should change it.
  return ToolError.of({ code, source: SOURCE, message, suggestion: `The server answered ${status}; check the URL.` });
}
