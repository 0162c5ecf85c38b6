/**
 * One live history follower per workflow, shared by every stream of it that one process serves (the
 * HTTP API's SSE clients, docs/ARCHITECTURE.md#live-event-streams): Temporal is long-polled once per
 * workflow however many clients watch it, so its calls per tick do not grow with them.
 *
 * A stream joins in three steps, so that it gets every event once and in order:
 * 1. it joins the workflow's follower (client/fan-out.ts), starting it when none runs; from then on
 *    the follower queues each new event for it. A new follower first describes the workflow and keeps
 *    back what was recorded before (`tailAfter`): the streams read that themselves;
 * 2. it reads what is recorded from where it starts (its run's first event, for its decoder), paged as
 *    any history read is (client/history.ts), not live;
 * 3. it takes the follower's events, leaving out those it has read already (`newTo`).
 * Every event recorded after the follower's description is queued for a stream that joined before it
 * was written, and every event recorded before the stream's read began is in that read: no gap.
 */
import type { Client } from '@temporalio/client';
import { FanOut } from './fan-out';
import { closeOf } from './follow';
import { comparePositions, currentRun, followHistory, type HistoryItem, type Position, type RunStart } from './history';

/** Where a history item is, for ordering (the `k` of a decoded event is the stream's). */
export const positionOf = (item: HistoryItem): Position => ({
  run: item.runStart,
  event: Number(item.event.eventId),
  k: 0,
});

/** Whether a follower's item is new to a stream that has read up to `read` (nothing yet: undefined). */
export const newTo = (read: Position | undefined, item: HistoryItem): boolean =>
  read === undefined || comparePositions(positionOf(item), read) > 0;

/**
 * Whether a follower that described its workflow as `described` (the current run and its length then)
 * passes `item` on: only what was written after, which no stream that joins from now on reads itself.
 */
export const tailAfter = (described: { runId: string; length: number }, item: HistoryItem): boolean =>
  item.runId !== described.runId || Number(item.event.eventId) > described.length;

/** Whether `item` closes its workflow's chain of runs (a close that is not a continue-as-new). */
const closesChain = (item: HistoryItem): boolean => closeOf(item.event) !== undefined;

/**
 * The live followers of one process, by namespace and workflow.
 *
 * ```ts
 * const followers = new HistoryFollowers();
 * for await (const { event } of followers.follow(client, 'agent-a1-task-3', { from: { runId } })) …
 * ```
 */
export class HistoryFollowers {
  private readonly fan: FanOut<string, HistoryItem>;

  /** `maxQueued`: events a stream may fall behind its follower before it is ended (FellBehindError). */
  constructor(opts: { maxQueued?: number } = {}) {
    this.fan = new FanOut(opts);
  }

  /** Workflows followed now (one follower each). */
  get following(): number {
    return this.fan.sources;
  }

  /** Streams reading `workflowId`'s follower now. */
  readers(client: Client, workflowId: string): number {
    return this.fan.readers(keyOf(client, workflowId));
  }

  /**
   * The events of `workflowId` from the start of `from`'s run, as they are written, until the chain
   * closes or `signal` aborts: what `followHistory(…, { live: true })` yields, the live part shared.
   */
  async *follow(
    client: Client,
    workflowId: string,
    opts: { from: RunStart; signal?: AbortSignal | undefined },
  ): AsyncGenerator<HistoryItem> {
    const signal = opts.signal;
    const tail = await this.fan.join(keyOf(client, workflowId), (stop) => liveTail(client, workflowId, stop), signal);
    try {
      let read: Position | undefined;
      for await (const item of followHistory(client, workflowId, {
        from: opts.from,
        live: false,
        ...(signal ? { signal } : {}),
      })) {
        yield item;
        read = positionOf(item);
        if (closesChain(item)) return;
      }
      if (signal?.aborted) return;
      for await (const item of tail) if (newTo(read, item)) yield item;
    } finally {
      tail.leave();
    }
  }
}

const keyOf = (client: Client, workflowId: string) => `${client.options.namespace}\u0000${workflowId}`;

/** A follower: the workflow's events written after it described it, live, until the chain closes or `signal` aborts. */
async function liveTail(client: Client, workflowId: string, signal: AbortSignal): Promise<AsyncIterable<HistoryItem>> {
  const described = await currentRun(client, workflowId, signal);
  const history = followHistory(client, workflowId, { from: { runId: described.runId }, live: true, signal });
  return (async function* () {
    for await (const item of history) if (tailAfter(described, item)) yield item;
  })();
}

/**
 * A workflow's history from `from` on: live through `followers` when given (the API's streams), else
 * read on its own (followHistory).
 */
export function readHistory(
  client: Client,
  workflowId: string,
  opts: { from: RunStart; live: boolean; signal?: AbortSignal | undefined; followers?: HistoryFollowers | undefined },
): AsyncGenerator<HistoryItem> {
  const { from, live, signal, followers } = opts;
  if (live && followers) return followers.follow(client, workflowId, { from, signal });
  return followHistory(client, workflowId, { from, live, ...(signal ? { signal } : {}) });
}
