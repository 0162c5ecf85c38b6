/**
 * One source, many readers: what a source yields is handed to every reader that has joined it, each
 * with a queue of its own. The first reader of a key starts its source, later ones join it, and the
 * source stops when its last reader leaves. A reader that falls too far behind is ended with
 * FellBehindError rather than holding an ever longer queue. The HTTP API's event streams share one
 * history follower per workflow this way (client/shared-history.ts), so Temporal is read once for all
 * the clients of a task.
 *
 * ```ts
 * const fan = new FanOut<string, number>();
 * const reader = await fan.join('k', async (signal) => ticks(signal));
 * for await (const n of reader) console.log(n);
 * ```
 */

/** A reader whose queue reached its cap: it ends, the others go on. */
export class FellBehindError extends Error {
  constructor(readonly queued: number) {
    super(
      `this stream fell ${queued} events behind its source (the client took them too slowly): reconnect with Last-Event-ID to resume`,
    );
    this.name = 'FellBehindError';
  }
}

/** Items a reader may have waiting before it is ended (FellBehindError). */
export const DEFAULT_MAX_QUEUED = 10_000;

/** One reader of a source: its items in order, then the source's end (or its error). */
export class Reader<T> implements AsyncIterable<T> {
  private queue: T[] = [];
  private head = 0;
  private done = false;
  private error: unknown;
  private wake: (() => void) | undefined;
  private left = false;

  constructor(
    private readonly maxQueued: number,
    private readonly onLeave: () => void,
  ) {}

  /** Items waiting for this reader. */
  get waiting(): number {
    return this.queue.length - this.head;
  }

  /** An item from the source; past the cap the reader ends with FellBehindError and its queue is freed. */
  push(item: T): void {
    if (this.done) return;
    if (this.waiting >= this.maxQueued) {
      const behind = this.waiting;
      this.queue = [];
      this.head = 0;
      this.end(new FellBehindError(behind));
      this.leave();
      return;
    }
    this.queue.push(item);
    this.wakeUp();
  }

  /** The source ended (with `error` when it failed): the reader gets what waits, then the end. */
  end(error?: unknown): void {
    if (this.done) return;
    this.done = true;
    this.error = error;
    this.wakeUp();
  }

  /** This reader is done with the source (the last one to leave stops it). Idempotent. */
  leave(): void {
    if (this.left) return;
    this.left = true;
    this.end();
    this.onLeave();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    try {
      for (;;) {
        if (this.head < this.queue.length) {
          const item = this.queue[this.head++] as T;
          // Compact now and then, so a long-lived reader's queue does not keep what it read.
          if (this.head > 1024 && this.head * 2 > this.queue.length) {
            this.queue = this.queue.slice(this.head);
            this.head = 0;
          }
          yield item;
          continue;
        }
        if (this.done) {
          if (this.error !== undefined) throw this.error;
          return;
        }
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      this.leave();
    }
  }

  private wakeUp(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** A running source and its readers. */
interface Entry<T> {
  readers: Set<Reader<T>>;
  stop: AbortController;
  ready: Promise<void>;
}

export class FanOut<K, T> {
  private readonly entries = new Map<K, Entry<T>>();

  constructor(private readonly opts: { maxQueued?: number } = {}) {}

  /** Sources running now. */
  get sources(): number {
    return this.entries.size;
  }

  /** Readers of `key`'s source now (0 when none runs). */
  readers(key: K): number {
    return this.entries.get(key)?.readers.size ?? 0;
  }

  /**
   * Join `key`'s source, starting it with `open` when none runs. Resolves once the source is open (a
   * reader that joins while it opens waits for the same `open`), so that what the source yields from
   * then on reaches the reader. `signal` ends the reader (as `leave` does).
   *
   * @throws what `open` threw (every reader waiting for it gets the same error; the next join tries again).
   */
  async join(
    key: K,
    open: (signal: AbortSignal) => Promise<AsyncIterable<T>>,
    signal?: AbortSignal,
  ): Promise<Reader<T>> {
    const entry = this.entries.get(key) ?? this.start(key, open);
    const gone = () => reader.leave();
    const reader: Reader<T> = new Reader<T>(this.opts.maxQueued ?? DEFAULT_MAX_QUEUED, () => {
      signal?.removeEventListener('abort', gone);
      this.leave(key, entry, reader);
    });
    entry.readers.add(reader);
    if (signal?.aborted) reader.leave();
    else signal?.addEventListener('abort', gone, { once: true });
    try {
      await entry.ready;
    } catch (err) {
      reader.leave();
      throw err;
    }
    return reader;
  }

  private start(key: K, open: (signal: AbortSignal) => Promise<AsyncIterable<T>>): Entry<T> {
    const entry: Entry<T> = { readers: new Set(), stop: new AbortController(), ready: Promise.resolve() };
    entry.ready = open(entry.stop.signal).then((source) => void this.pump(key, entry, source));
    // A source that cannot open is forgotten: its readers get the error, the next join opens anew.
    entry.ready.catch(() => this.forget(key, entry));
    this.entries.set(key, entry);
    return entry;
  }

  /** Hand each item to every reader; the source's end or error ends them all. */
  private async pump(key: K, entry: Entry<T>, source: AsyncIterable<T>): Promise<void> {
    let error: unknown;
    try {
      for await (const item of source) for (const r of entry.readers) r.push(item);
    } catch (err) {
      if (!entry.stop.signal.aborted) error = err ?? new Error('the source failed');
    }
    // Forgotten first: a reader that joins from now on starts a new source, never this ended one.
    this.forget(key, entry);
    for (const r of entry.readers) r.end(error);
  }

  private leave(key: K, entry: Entry<T>, reader: Reader<T>): void {
    entry.readers.delete(reader);
    if (entry.readers.size > 0) return;
    this.forget(key, entry);
    entry.stop.abort();
  }

  private forget(key: K, entry: Entry<T>): void {
    if (this.entries.get(key) === entry) this.entries.delete(key);
  }
}
