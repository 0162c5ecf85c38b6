/**
 * Whether a stream's client still reads (docs/API.md#live-events): not whether a write resolved (a
 * socket's buffers take megabytes of keep-alives from a client that reads nothing), but whether the
 * bytes written to it are being taken. A client that has taken nothing for `slowMs` while bytes wait
 * for it is dropped. Pure: the host samples its socket (api/socket-flow.ts).
 */

/** One look at a stream's socket: bytes written to it so far, and how many of them the client has not taken. */
export interface FlowSample {
  written: number;
  waiting: number;
  /** When, in ms. */
  at: number;
}

/** What the client has taken, and since when it has not been behind: when it last took something or had all. */
export interface ReaderState {
  taken: number;
  since: number;
}

/**
 * The reader after a sample: it is keeping up when nothing waits for it or it took more since the last
 * sample; otherwise `since` stays where it was.
 *
 * ```ts
 * let r = readerAfter(undefined, { written: 100, waiting: 0, at: 0 });  // { taken: 100, since: 0 }
 * r = readerAfter(r, { written: 9000, waiting: 8900, at: 5000 });        // { taken: 100, since: 0 }: behind
 * readerStalled(r, 30_000, 30_000)                                      // true
 * ```
 */
export function readerAfter(prev: ReaderState | undefined, s: FlowSample): ReaderState {
  const taken = s.written - s.waiting;
  if (!prev || s.waiting <= 0 || taken > prev.taken) return { taken, since: s.at };
  return prev;
}

/** True when the reader has taken nothing for `slowMs` while bytes waited for it. */
export const readerStalled = (r: ReaderState, now: number, slowMs: number): boolean => now - r.since >= slowMs;

/** How often a stream's socket is looked at: a few times within `slowMs`, at most every 5 s. */
export const flowCheckEveryMs = (slowMs: number): number => Math.max(20, Math.min(5_000, Math.floor(slowMs / 4)));
