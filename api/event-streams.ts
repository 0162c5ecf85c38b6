/**
 * The live event streams of one API process (docs/API.md#live-events): each written as Server-Sent
 * Events with a keep-alive comment; at most so many in the process, for one tenant and for one client
 * (core/stream-caps.ts); ended when the client leaves or stops taking what is written to it
 * (core/stream-flow.ts, measured on its socket by api/socket-flow.ts), and with a retryable `error`
 * event when Temporal goes out of reach (the client resumes with `Last-Event-ID`). The streams of one
 * workflow share one history follower (client/shared-history.ts): Temporal is read once per workflow,
 * not once per client.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { BadEventIdError, type StreamOptions } from '../client/event-stream';
import { FellBehindError } from '../client/fan-out';
import { HistoryFollowers } from '../client/shared-history';
import type { StreamEvent } from '../core/contract';
import { InvalidArgumentError } from '../core/errors';
import { streamCaps, streamRefusal, type StreamCaps, type StreamHolder } from '../core/stream-caps';
import { flowCheckEveryMs, readerAfter, readerStalled, type ReaderState } from '../core/stream-flow';
import { messageOf, problem, unreachable } from './problem';
import { socketFlow } from './socket-flow';

/** The streams' settings, part of the app's options (`ApiOptions`). */
export interface StreamSettings {
  /** Event streams this process serves at once (default 100); one more is a 503 with `Retry-After`. */
  maxStreams?: number;
  /** Event streams one tenant holds at once (default: half of `maxStreams`); one more is a 429. Only with tenants. */
  maxStreamsPerTenant?: number;
  /** Event streams one client (a token's `sub`; without auth, an address) holds at once (default 10); one more is a 429. */
  maxStreamsPerClient?: number;
  /** A comment line every this many ms keeps proxies from closing an idle stream (default 15 s). */
  keepAliveMs?: number;
  /** A client that takes none of what waits for it for this long is dropped (default 30 s): nothing buffers for it. */
  slowClientMs?: number;
  /**
   * A stream ends, with a retryable `error`, after this long (default: never; on Lambda, 5 s before the
   * invocation's time runs out), so its client resumes with `Last-Event-ID` rather than being cut.
   */
  maxStreamMs?: number;
}

/** On Lambda a stream ends this long before the invocation's timeout: the client gets a clean end, not a cut. */
const LAMBDA_MARGIN_MS = 5_000;

/** The invocation's time left, when the app runs on Lambda (hono's adapters pass the context as the env). */
function lambdaTimeLeft(c: Context): number | undefined {
  const env = c.env as { context?: LambdaTimer; lambdaContext?: LambdaTimer } | undefined;
  return (env?.context ?? env?.lambdaContext)?.getRemainingTimeInMillis?.();
}
type LambdaTimer = { getRemainingTimeInMillis?: () => number };

/** The client's socket, when @hono/node-server serves the app (it passes the Node request as `incoming`). */
export function nodeSocket(c: Context): Socket | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket ?? undefined;
}

/** The streams open now, by the process, each tenant and each client. */
class Holdings {
  process = 0;
  private readonly tenants = new Map<string, number>();
  private readonly clients = new Map<string, number>();

  held(who: StreamHolder) {
    return {
      process: this.process,
      tenant: who.tenant === undefined ? 0 : (this.tenants.get(who.tenant) ?? 0),
      client: this.clients.get(clientKey(who)) ?? 0,
    };
  }

  add(who: StreamHolder, by: 1 | -1): void {
    this.process += by;
    if (who.tenant !== undefined) bump(this.tenants, who.tenant, by);
    bump(this.clients, clientKey(who), by);
  }
}

/** A client within its tenant: two tenants' `alice` are two clients. */
const clientKey = (who: StreamHolder) => `${who.tenant ?? ''}\u0000${who.clientBy}:${who.client}`;

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

export class EventStreams {
  readonly caps: StreamCaps;
  /** One live follower per workflow, shared by this process's streams of it. */
  readonly followers = new HistoryFollowers();
  private readonly holdings = new Holdings();

  /** @throws RangeError for caps that do not nest (a client's share over its tenant's, a tenant's over the process's). */
  constructor(private readonly opts: StreamSettings) {
    this.caps = streamCaps(opts);
  }

  /**
   * Serve one stream for `who`: refused (429 for its own share, 503 for the process's) when a cap is
   * reached; an unknown task or a bad `Last-Event-ID` is an HTTP error before the stream starts.
   */
  async serve(
    c: Context,
    who: StreamHolder,
    open: (o: StreamOptions) => Promise<AsyncGenerator<StreamEvent>>,
  ): Promise<Response> {
    const refused = streamRefusal(this.holdings.held(who), this.caps, who);
    if (refused) {
      c.header('Retry-After', '5');
      return problem(c, refused.status, refused.detail);
    }
    const lastEventId = c.req.header('last-event-id') || undefined;
    const from = c.req.query('from') === '0' ? ('start' as const) : ('now' as const);
    const stop = new AbortController();
    this.holdings.add(who, 1);
    let events: AsyncGenerator<StreamEvent>;
    try {
      // Opened before the response: an unknown task or a bad Last-Event-ID is an HTTP error, not a broken stream.
      events = await open({
        ...(lastEventId ? { lastEventId } : {}),
        from,
        signal: stop.signal,
        followers: this.followers,
      });
    } catch (err) {
      this.holdings.add(who, -1);
      if (err instanceof BadEventIdError) throw new InvalidArgumentError(err.message);
      throw err;
    }
    c.header('X-Accel-Buffering', 'no');
    return streamSSE(c, async (stream) => {
      try {
        await this.pump(c, stream, events, stop);
      } finally {
        stop.abort();
        this.holdings.add(who, -1);
      }
    });
  }

  /** Write the events as they come, with keep-alives, until the stream ends, the client leaves or stops reading. */
  private async pump(
    c: Context,
    stream: SSEStreamingApi,
    events: AsyncGenerator<StreamEvent>,
    stop: AbortController,
  ): Promise<void> {
    const leave = () => stop.abort();
    stream.onAbort(leave);
    c.req.raw.signal?.addEventListener('abort', leave, { once: true });
    const slowMs = this.opts.slowClientMs ?? 30_000;
    const socket = nodeSocket(c);
    /** A client that takes nothing for `slowMs`: its socket is closed, so nothing stays buffered for it. */
    const drop = () => {
      stop.abort();
      stream.abort();
      socket?.destroy();
    };
    /** A write the client does not take within `slowMs` drops it (where there is no socket to look at, the only sign). */
    const write = async (text: string) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), slowMs)));
      const r = await Promise.race([stream.write(text).then(() => 'ok' as const), late]);
      clearTimeout(timer);
      if (r === 'late') drop();
    };
    const beat = setInterval(() => void write(': keep-alive\n\n'), this.opts.keepAliveMs ?? 15_000);
    const watch = socket && watchReader(socket, slowMs, drop);
    // Lambda never says that a client left; its invocation's timeout ends every stream, so end it first.
    const timeLeft = lambdaTimeLeft(c);
    const limitMs = timeLeft !== undefined ? Math.max(0, timeLeft - LAMBDA_MARGIN_MS) : this.opts.maxStreamMs;
    let expired = false;
    const deadline =
      limitMs === undefined
        ? undefined
        : setTimeout(() => {
            expired = true;
            stop.abort();
          }, limitMs);
    try {
      await write('retry: 2000\n\n');
      for await (const e of events) {
        if (stop.signal.aborted) break;
        await write(sseText(e));
      }
    } catch (err) {
      if (!stop.signal.aborted) {
        // A client that fell behind its workflow's follower catches up from history when it reconnects.
        const behind = err instanceof FellBehindError;
        const retryable = behind || unreachable(err);
        if (!retryable) console.error('[api] an event stream failed', err);
        const message = behind
          ? messageOf(err)
          : retryable
            ? `Temporal went out of reach (${messageOf(err)}): reconnect with Last-Event-ID to resume`
            : `the stream failed: ${messageOf(err)}`;
        await write(sseText({ event: 'error', data: { message, retryable } }));
      }
    } finally {
      if (expired) {
        const message = `this stream reached its time limit on this host (${Math.round((limitMs ?? 0) / 1000)} s): reconnect with Last-Event-ID to resume`;
        await write(sseText({ event: 'error', data: { message, retryable: true } }));
      }
      clearInterval(beat);
      clearInterval(watch);
      clearTimeout(deadline);
    }
  }
}

/**
 * Look at the socket a few times within `slowMs`: when the client has taken none of what waits for it
 * for `slowMs` (core/stream-flow.ts), `drop`.
 */
function watchReader(socket: Socket, slowMs: number, drop: () => void): NodeJS.Timeout {
  let reader: ReaderState | undefined;
  const timer = setInterval(() => {
    const now = Date.now();
    reader = readerAfter(reader, socketFlow(socket, now));
    if (!readerStalled(reader, now, slowMs)) return;
    clearInterval(timer);
    drop();
  }, flowCheckEveryMs(slowMs));
  return timer;
}

/** An event as SSE lines; its data is one line of JSON. */
export function sseText(e: StreamEvent): string {
  return `event: ${e.event}\n${e.id !== undefined ? `id: ${e.id}\n` : ''}data: ${JSON.stringify(e.data)}\n\n`;
}
