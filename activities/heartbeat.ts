/**
 * Heartbeats for every activity that waits (LLM calls, tools, scripted delays). Temporal delivers a
 * cancellation only in a heartbeat's answer, so this cadence, with the worker's heartbeat throttle
 * (workers/worker.ts), bounds how fast SYSTEM_HALT reaches work in flight.
 *
 * The first beat comes one interval after the start, not at it: the SDK sends a first heartbeat at
 * once, and that is a write to the workflow's state on the server; an activity that ends within the
 * interval (most tool calls, every instant turn) then costs no heartbeat at all. A halt still reaches
 * work in flight within an interval plus the throttle, as before.
 */
import { Context } from '@temporalio/activity';

/** How often a waiting activity heartbeats. */
export const HEARTBEAT_EVERY_MS = 200;

/**
 * Await `work` while heartbeating.
 *
 * ```ts
 * const res = await withHeartbeats(fetch(url, { signal: Context.current().cancellationSignal }), { model });
 * ```
 */
export async function withHeartbeats<T>(work: Promise<T>, detail: Record<string, unknown> = {}): Promise<T> {
  const ctx = Context.current();
  const started = Date.now();
  const beat = () => ctx.heartbeat({ ...detail, waitedMs: Date.now() - started });
  const timer = setInterval(beat, HEARTBEAT_EVERY_MS);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}
