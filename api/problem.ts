/**
 * The API's errors as RFC 9457 `application/problem+json` (docs/API.md#errors): one shape for every
 * route, the dev API's refusals and the event streams' (api/event-streams.ts) included; and how the API
 * tells Temporal out of reach from other failures.
 */
import type { Context } from 'hono';

/** The `title` of each status the API answers with. */
export const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * A problem response: `detail` says what was wrong and what to do, `errors` lists every invalid field.
 *
 * ```ts
 * return problem(c, 404, 'no agent a1');
 * ```
 */
export function problem(c: Context, status: number, detail: string, errors?: string[]): Response {
  const body = { type: 'about:blank', title: TITLES[status] ?? 'Error', status, detail, ...(errors ? { errors } : {}) };
  return c.body(JSON.stringify(body), status as 400, { 'Content-Type': 'application/problem+json' });
}

/** gRPC UNAVAILABLE / DEADLINE_EXCEEDED, or a connection that could not be made. */
export function unreachable(err: unknown): boolean {
  for (let e: unknown = err, i = 0; e && i < 5; i++) {
    const code = (e as { code?: unknown }).code;
    if (code === 14 || code === 4) return true;
    if (/cannot reach Temporal|UNAVAILABLE|ECONNREFUSED|Failed to connect/i.test(messageOf(e))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
