/**
 * Reading a workflow's history across its chain of runs (continue-as-new keeps the workflow id, not the
 * run), long-polled, with a position for every event that stays valid after the run is gone from view:
 * the run's start time and the event id. The CLI's live view (client/follow.ts) and the HTTP API's event
 * streams (client/event-stream.ts) read histories through here.
 */
import { setMaxListeners } from 'node:events';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

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
 * as recorded so far. Ends when the chain closes, or `signal` aborts.
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
  let nextPageToken: Uint8Array | undefined;
  for (;;) {
    if (opts.signal?.aborted) return;
    const request = {
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      waitNewEvent: live,
      ...(nextPageToken?.length ? { nextPageToken } : {}),
    };
    let res;
    try {
      res = await call(client, opts.signal, () => client.workflowService.getWorkflowExecutionHistory(request));
    } catch (err) {
      if (opts.signal?.aborted) return;
      throw err;
    }
    let next: string | undefined;
    for (const event of res.history?.events ?? []) {
      if (Number(event.eventId) === 1) runStart = timeOf(event);
      yield { runId, runStart, event };
      next = event.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? next;
    }
    if (next) {
      // The next run's history, from its first event.
      runId = next;
      nextPageToken = undefined;
      continue;
    }
    nextPageToken = res.nextPageToken ?? undefined;
    if (!nextPageToken?.length) return;
  }
}
