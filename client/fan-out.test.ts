import { FanOut, FellBehindError, type Reader } from './fan-out';

/** A source the test feeds by hand; it records how often it was opened and whether it was stopped. */
function handSource<T>() {
  const s = {
    opened: 0,
    stopped: 0,
    push: (_item: T) => {},
    end: (_error?: Error) => {},
    open: async (signal: AbortSignal): Promise<AsyncIterable<T>> => {
      s.opened++;
      const queue: T[] = [];
      let done = false;
      let error: Error | undefined;
      let wake: (() => void) | undefined;
      const poke = () => {
        wake?.();
        wake = undefined;
      };
      s.push = (item) => {
        queue.push(item);
        poke();
      };
      s.end = (e) => {
        done = true;
        error = e;
        poke();
      };
      signal.addEventListener('abort', () => {
        s.stopped++;
        s.end();
      });
      return (async function* () {
        for (;;) {
          if (queue.length) yield queue.shift() as T;
          else if (error) throw error;
          else if (done) return;
          else await new Promise<void>((r) => (wake = r));
        }
      })();
    },
  };
  return s;
}

/** Let the fan-out hand what was pushed to its readers. */
const settle = () => new Promise((r) => setImmediate(r));

/** The next `n` items of a reader. */
async function take<T>(reader: Reader<T>, n: number): Promise<T[]> {
  const out: T[] = [];
  if (n === 0) return out;
  for await (const item of { [Symbol.asyncIterator]: () => iteratorOf(reader) }) {
    out.push(item);
    if (out.length === n) break;
  }
  return out;
}
/** One iterator per reader (a reader is read once): kept so that `take` can be called again. */
const iterators = new WeakMap<object, AsyncIterator<unknown>>();
function iteratorOf<T>(reader: Reader<T>): AsyncIterator<T> {
  let it = iterators.get(reader) as AsyncIterator<T> | undefined;
  if (!it) iterators.set(reader, (it = reader[Symbol.asyncIterator]()));
  // A `for await` over this wrapper must not close the reader when it breaks.
  return { next: () => it.next() };
}

describe('FanOut: one source, many readers', () => {
  it('opens one source for every reader of a key, and hands each item to each reader that joined before it', async () => {
    const fan = new FanOut<string, number>();
    const src = handSource<number>();
    const a = await fan.join('task', src.open);
    src.push(1);
    await settle();
    const b = await fan.join('task', src.open);
    src.push(2);
    src.push(3);
    await settle();
    expect(src.opened).toBe(1);
    expect(fan.readers('task')).toBe(2);
    expect(await take(a, 3)).toEqual([1, 2, 3]);
    expect(await take(b, 2)).toEqual([2, 3]);
  });

  it('keeps sources of different keys apart', async () => {
    const fan = new FanOut<string, string>();
    const one = handSource<string>();
    const two = handSource<string>();
    const a = await fan.join('one', one.open);
    const b = await fan.join('two', two.open);
    one.push('from one');
    two.push('from two');
    await settle();
    expect(fan.sources).toBe(2);
    expect(await take(a, 1)).toEqual(['from one']);
    expect(await take(b, 1)).toEqual(['from two']);
  });

  it('stops the source when its last reader leaves, and opens a new one for the next reader', async () => {
    const fan = new FanOut<string, number>();
    const src = handSource<number>();
    const a = await fan.join('task', src.open);
    const b = await fan.join('task', src.open);
    a.leave();
    expect(src.stopped).toBe(0);
    b.leave();
    expect(src.stopped).toBe(1);
    expect(fan.sources).toBe(0);
    await fan.join('task', src.open);
    expect(src.opened).toBe(2);
  });

  it('ends a reader when its signal aborts, as a client that goes away', async () => {
    const fan = new FanOut<string, number>();
    const src = handSource<number>();
    const gone = new AbortController();
    const a = await fan.join('task', src.open, gone.signal);
    const reading = take(a, 5);
    gone.abort();
    expect(await reading).toEqual([]);
    expect(src.stopped).toBe(1);
  });

  it('ends a reader that falls behind with FellBehindError and frees its queue; the others go on', async () => {
    const fan = new FanOut<string, number>({ maxQueued: 3 });
    const src = handSource<number>();
    const slow = await fan.join('task', src.open);
    const fast = await fan.join('task', src.open);
    const fastSaw: number[] = [];
    for (let i = 1; i <= 5; i++) {
      src.push(i);
      await settle();
      fastSaw.push(...(await take(fast, 1)));
    }
    expect(fastSaw).toEqual([1, 2, 3, 4, 5]);
    expect(slow.waiting).toBe(0);
    await expect(take(slow, 1)).rejects.toThrow(FellBehindError);
    await expect(take(slow, 1)).resolves.toEqual([]);
    expect(fan.readers('task')).toBe(1);
    expect(src.stopped).toBe(0);
  });

  it("ends every reader with the source's error after what it had, and opens anew on the next join", async () => {
    const fan = new FanOut<string, number>();
    const src = handSource<number>();
    const a = await fan.join('task', src.open);
    const b = await fan.join('task', src.open);
    src.push(7);
    src.end(Object.assign(new Error('14 UNAVAILABLE: no connection'), { code: 14 }));
    await settle();
    expect(fan.sources).toBe(0);
    for (const r of [a, b]) {
      expect(await take(r, 1)).toEqual([7]);
      await expect(take(r, 1)).rejects.toMatchObject({ code: 14 });
    }
    await fan.join('task', src.open);
    expect(src.opened).toBe(2);
  });

  it("ends every reader after the source's last item when it ends", async () => {
    const fan = new FanOut<string, number>();
    const src = handSource<number>();
    const a = await fan.join('task', src.open);
    src.push(1);
    src.end();
    await settle();
    expect(await take(a, 5)).toEqual([1]);
    expect(fan.sources).toBe(0);
  });

  it('gives every reader waiting for a source that cannot open its error, and tries again on the next join', async () => {
    const fan = new FanOut<string, number>();
    let opens = 0;
    const failing = async (): Promise<AsyncIterable<number>> => {
      opens++;
      await settle();
      throw new Error('5 NOT_FOUND: workflow not found');
    };
    const joins = [fan.join('task', failing), fan.join('task', failing)];
    for (const j of joins) await expect(j).rejects.toThrow(/NOT_FOUND/);
    expect(opens).toBe(1);
    expect(fan.sources).toBe(0);
    await expect(fan.join('task', failing)).rejects.toThrow(/NOT_FOUND/);
    expect(opens).toBe(2);
  });
});
