/**
 * What every network LLM provider does while a request is in flight: heartbeat (Temporal only delivers
 * a cancellation through a heartbeat's answer), hand Temporal's cancellation signal to the request, and
 * turn an abort caused by that cancellation back into the activity's own cancellation, never into pain.
 */
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';

/**
 * If the activity was cancelled (SYSTEM_HALT, heartbeat timeout, worker shutdown), rethrow the
 * cancellation itself: whatever the aborted request threw is only a consequence of it.
 *
 * ```ts
 * try { await call(); } catch (err) { rethrowIfCancelled(); classify(err); }
 * ```
 */
export function rethrowIfCancelled(): void {
  const signal = Context.current().cancellationSignal;
  if (signal.aborted) throw signal.reason ?? new CancelledFailure('activity cancelled');
}

/** Node's global undici dispatcher, reached the way `@google/genai` itself reaches it. */
const UNDICI_GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');

interface Dispatcher {
  dispatch(opts: Record<string, unknown>, handler: unknown): boolean;
}

/**
 * `init` plus a fetch `dispatcher` without undici's 300 s header and body timeouts: a long generation (a
 * local model on a CPU, a reasoning model) may take longer, and the call is already bounded by Temporal's
 * start-to-close timeout and stopped by cancellation. `init` unchanged when Node's dispatcher is not found.
 *
 * ```ts
 * await fetch(url, withoutUndiciTimeouts({ method: 'POST', body, signal }));
 * ```
 */
export function withoutUndiciTimeouts(init: RequestInit): RequestInit {
  const global = globalThis as unknown as Record<symbol, Dispatcher | undefined>;
  if (!global[UNDICI_GLOBAL_DISPATCHER]) new Headers(); // undici initialises itself lazily
  const base = global[UNDICI_GLOBAL_DISPATCHER];
  if (!base || typeof base.dispatch !== 'function') return init;
  const dispatcher = {
    dispatch: (opts: Record<string, unknown>, handler: unknown) =>
      base.dispatch({ ...opts, headersTimeout: 0, bodyTimeout: 0 }, handler),
  };
  // `dispatcher` is Node's extension of RequestInit, absent from the DOM typings.
  return { ...init, dispatcher } as unknown as RequestInit;
}
