/**
 * The API's errors as RFC 9457 problem+json (docs/API.md#errors), and how it tells Temporal out of reach
 * from other failures. Shared by the routes (api/app.ts) and the event streams (api/event-streams.ts).
 */
import type { Context } from 'hono';

/** Each status's title. */
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
 * A problem+json response.
 *
 * ```ts
 * return problem(c, 404, 'no task workflow agent-a1-task-9');
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
