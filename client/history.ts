/**
 * Reading a workflow's history across its chain of runs (continue-as-new keeps the workflow id, not the
 * run), long-polled, with a position for every event that stays valid after the run is gone from view:
 * the run's start time and the event id. The CLI's live view (client/follow.ts) and the HTTP API's event
 * streams (client/event-stream.ts) read histories through here.
 */
import { setMaxListeners } from 'node:events';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { planPage, type RunExtent, type RunRead } from '../core/history-pages';

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/**
 * Where an event is: `run` is its run's start time (ms since the epoch, strictly increasing along a chain
 * of runs), `event` its id within the run, `k` the index of a thing decoded from it. Printed `run.event.k`.
 */
export interface Position {
  run: number;
  event: number;
  k: number;
}

/** One event of a history, with its run. */
export interface HistoryItem {
  runId: string;
  /** The run's start time (ms), the `run` of a Position. */
  runStart: number;
  event: HistoryEvent;
}

/** A position that names no run of the workflow (a stale or forged `Last-Event-ID`). */
export class UnknownPositionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnknownPositionError';
  }
}

export const formatPosition = (p: Position): string => `${p.run}.${p.event}.${p.k}`;

/** `run.event.k`, or undefined when the text is not one. */
export function parsePosition(text: string): Position | undefined {
  const m = /^(\d{1,15})\.(\d{1,12})\.(\d{1,4})$/.exec(text);
  return m ? { run: Number(m[1]), event: Number(m[2]), k: Number(m[3]) } : undefined;
}

/** Negative, zero or positive as `a` is before, at or after `b`. */
export function comparePositions(a: Position, b: Position): number {
  return a.run - b.run || a.event - b.event || a.k - b.k;
}

/** Milliseconds of a proto timestamp. */
export function timeOf(e: HistoryEvent): number {
  const t = e.eventTime;
  return t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;
}

/** A run of the chain and where in it reading starts. */
export interface RunStart {
  runId: string;
  /** Known once the run's first event is read; set here when the run was found by its start time. */
  runStart?: number;
}

async function call<T>(client: Client, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
  return signal ? client.withAbortSignal(signal, fn) : fn();
}

/** The current run of a workflow and its length now; throws the SDK's NotFound for an unknown workflow. */
export async function currentRun(
  client: Client,
  workflowId: string,
  signal?: AbortSignal,
): Promise<{ runId: string; firstRunId: string; length: number; running: boolean }> {
  const res = await call(client, signal, () =>
    client.workflowService.describeWorkflowExecution({
      namespace: client.options.namespace,
      execution: { workflowId },
    }),
  );
  const info = res.workflowExecutionInfo;
  return {
    runId: info?.execution?.runId ?? '',
    firstRunId: info?.firstRunId || info?.execution?.runId || '',
    length: Number(info?.historyLength ?? 0),
    running: info?.status === temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING,
  };
}

/** A run's first event: its start time, and the run it continued from. */
export async function firstEvent(
  client: Client,
  workflowId: string,
  runId: string,
  signal?: AbortSignal,
): Promise<{ start: number; previous?: string }> {
  const res = await call(client, signal, () =>
    client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      maximumPageSize: 1,
    }),
  );
  const e = res.history?.events?.[0];
  const previous = e?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
  return { start: e ? timeOf(e) : 0, ...(previous ? { previous } : {}) };
}

/**
 * The run of `workflowId` that started at `runStart` (a Position's `run`), looked for from the current
 * run backwards: a client resuming a stream is usually in the current run or the one before it.
 *
 * @throws UnknownPositionError when no run of the workflow started then.
 */
export async function runStartedAt(
  client: Client,
  workflowId: string,
  runStart: number,
  signal?: AbortSignal,
): Promise<RunStart> {
  let runId: string | undefined = (await currentRun(client, workflowId, signal)).runId;
  while (runId) {
    const first = await firstEvent(client, workflowId, runId, signal);
    if (first.start === runStart) return { runId, runStart };
    if (first.start < runStart) break;
    runId = first.previous;
  }
  throw new UnknownPositionError(`no run of ${workflowId} started at ${runStart} (ms): the position is not one of it`);
}

/**
 * Every event of `workflowId` from the start of `from`'s run, run after run, as it is written (`live`) or
 * as recorded so far. Ends when the chain closes, or `signal` aborts. Each run is read in pages no
 * larger than gRPC's 4 MiB limit allows (`runEvents`), so a history of any size can be read.
 *
 * ```ts
 * for await (const { event } of followHistory(client, 'agent-a1-task-3', { from: { runId } })) …
 * ```
 */
export async function* followHistory(
  client: Client,
  workflowId: string,
  opts: { from: RunStart; live?: boolean; signal?: AbortSignal },
): AsyncGenerator<HistoryItem> {
  const live = opts.live ?? true;
  // Each long poll listens on the signal for its own duration; a long task makes many of them.
  if (opts.signal) setMaxListeners(0, opts.signal);
  let runId = opts.from.runId;
  let runStart = opts.from.runStart ?? 0;
  for (;;) {
    let next: string | undefined;
    for await (const event of runEvents(client, workflowId, runId, { live, signal: opts.signal })) {
      if (Number(event.eventId) === 1) runStart = timeOf(event);
      yield { runId, runStart, event };
      next = event.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? next;
    }
    // The next run's history, from its first event.
    if (!next) return;
    runId = next;
  }
}

/**
 * The events of one run of `workflowId`, in pages that each stay under gRPC's 4 MiB limit
 * (core/history-pages.ts): the run is described first (its size in bytes), then read all at once when it
 * fits, one batch at a time while the rest does not. Live, the tail is long-polled a batch at a time.
 * Each event comes once and in order (`RunPages`). Ends with the run, or when `signal` aborts.
 *
 * ```ts
 * for await (const e of runEvents(client, 'agent-a1-task-3', runId, { live: false })) …
 * ```
 */
export async function* runEvents(
  client: Client,
  workflowId: string,
  runId: string,
  opts: { live?: boolean; signal?: AbortSignal | undefined },
): AsyncGenerator<HistoryEvent> {
  const pages = new RunPages(client, workflowId, runId, opts.live ?? false, opts.signal);
  for (;;) {
    if (opts.signal?.aborted) return;
    let page;
    try {
      page = await pages.next();
    } catch (err) {
      if (opts.signal?.aborted) return;
      throw err;
    }
    yield* page.events;
    if (page.last) return;
  }
}

/**
 * One run's history, page after page, each event once and in order. A long poll continued with a
 * page token can skip a batch (seen with one-batch pages: a workflow task's events the server had
 * shown before they were written), so event ids, which count up from 1 without a gap, are checked: an
 * event sent again is dropped, and missing ones are read back from the run's end (a few batches).
 */
class RunPages {
  private readonly read: RunRead = { bytes: 0, events: 0 };
  private extent: RunExtent | undefined;
  private fresh = false;
  private counting = false;
  private token: Uint8Array | undefined;

  constructor(
    private readonly client: Client,
    private readonly workflowId: string,
    private readonly runId: string,
    private readonly live: boolean,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /** The next page's new events, and whether it was the run's last. */
  async next(): Promise<{ events: HistoryEvent[]; last: boolean }> {
    const res = await this.page();
    const events: HistoryEvent[] = [];
    for (const event of res.history?.events ?? []) {
      const id = Number(event.eventId);
      if (id <= this.read.events) continue;
      if (id > this.read.events + 1)
        for (const missed of await this.between(this.read.events + 1, id - 1)) events.push(this.count(missed));
      events.push(this.count(event));
    }
    this.token = res.nextPageToken?.length ? res.nextPageToken : undefined;
    return { events, last: !this.token };
  }

  /** The page the plan allows; one too large for the client (a batch beyond the plan's room) is asked again a batch at a time. */
  private async page() {
    let plan = planPage(this.extent ?? (await this.describe()), this.read, this.fresh);
    if ('describe' in plan) plan = planPage(await this.describe(), this.read, true);
    const batches = 'batches' in plan ? plan.batches : 1;
    this.fresh = false;
    // Bytes matter while the rest is too large for one page; a page of more leaves too little to count.
    this.counting = batches === 1 && this.read.events < (this.extent?.events ?? 0);
    try {
      return await this.history(batches);
    } catch (err) {
      // RESOURCE_EXHAUSTED is also a rate limit (the SDK has waited it out by now): one batch is asked either way.
      if (batches === 1 || (err as { code?: unknown }).code !== RESOURCE_EXHAUSTED) throw err;
      return this.history(1);
    }
  }

  private history(batches: number) {
    return call(this.client, this.signal, () =>
      this.client.workflowService.getWorkflowExecutionHistory({
        namespace: this.client.options.namespace,
        execution: { workflowId: this.workflowId, runId: this.runId },
        maximumPageSize: batches,
        waitNewEvent: this.live,
        ...(this.token ? { nextPageToken: this.token } : {}),
      }),
    );
  }

  private async describe(): Promise<RunExtent> {
    this.extent = await runExtent(this.client, this.workflowId, this.runId, this.signal);
    this.fresh = true;
    return this.extent;
  }

  /**
   * An event read. Its bytes are counted while the run is read a batch at a time (encoding an event
   * costs ~10 µs); uncounted bytes only make the rest look larger, and the pages smaller.
   */
  private count(event: HistoryEvent): HistoryEvent {
    if (this.counting) this.read.bytes += eventBytes(event);
    this.read.events = Number(event.eventId);
    return event;
  }

  /** Events `from`..`to` (ids), read from the run's end backwards a batch at a time, oldest first. */
  private async between(from: number, to: number): Promise<HistoryEvent[]> {
    const found: HistoryEvent[] = [];
    let token: Uint8Array | undefined;
    do {
      const res = await call(this.client, this.signal, () =>
        this.client.workflowService.getWorkflowExecutionHistoryReverse({
          namespace: this.client.options.namespace,
          execution: { workflowId: this.workflowId, runId: this.runId },
          maximumPageSize: 1,
          ...(token ? { nextPageToken: token } : {}),
        }),
      );
      for (const e of res.history?.events ?? []) {
        const id = Number(e.eventId);
        if (id >= from && id <= to) found.push(e);
        if (id <= from) return found.reverse();
      }
      token = res.nextPageToken?.length ? res.nextPageToken : undefined;
    } while (token);
    return found.reverse();
  }
}

/** A run's size now, from its description; throws the SDK's NotFound for an unknown workflow or run. */
async function runExtent(
  client: Client,
  workflowId: string,
  runId: string,
  signal: AbortSignal | undefined,
): Promise<RunExtent> {
  const res = await call(client, signal, () =>
    client.workflowService.describeWorkflowExecution({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
    }),
  );
  const info = res.workflowExecutionInfo;
  return {
    bytes: Number(info?.historySizeBytes ?? 0),
    events: Number(info?.historyLength ?? 0),
    closed: info?.status !== temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING,
  };
}

/** An event's size as Temporal counts a history's (`historySizeBytes`): its encoded bytes. */
const eventBytes = (e: HistoryEvent): number => temporal.api.history.v1.HistoryEvent.encode(e).finish().length;

/** gRPC's RESOURCE_EXHAUSTED: an answer over the client's message limit, or a rate limit. */
const RESOURCE_EXHAUSTED = 8;
