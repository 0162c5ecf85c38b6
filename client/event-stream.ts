/**
 * The live events of a task or an agent, for the HTTP API's Server-Sent Events (docs/API.md#live-events):
 * the task's history decoded by the CLI's own decoder (client/follow.ts), named as the stream names them,
 * each with an id that resumes after it. A task stream's id is its event's Position (`run.event.k`,
 * client/history.ts); an agent stream's is the agent's Position, then `_` and the current task's, so
 * ids increase (agent part first) and a reconnect with `Last-Event-ID` has no gap and no duplicate, also
 * across continue-as-new and a restart of the API. An agent's stream is client/agent-stream.ts.
 */
import type { Client } from '@temporalio/client';
import type { ApprovalDecision } from '../core/approval';
import type { StreamEvent } from '../core/contract';
import { previewOf } from '../core/stream-preview';
import type { AgentState } from '../core/types';
import { TaskEventDecoder, type TaskEvent } from './follow';
import {
  comparePositions,
  currentRun,
  firstEvent,
  formatPosition,
  parsePosition,
  runStartedAt,
  UnknownPositionError,
  type Position,
  type RunStart,
} from './history';
import { readHistory, type HistoryFollowers } from './shared-history';

/** An event without its id: what one history event means to a person. */
export type StreamEventBody = StreamEvent extends infer E ? (E extends unknown ? Omit<E, 'id'> : never) : never;

/** Where a stream starts without `Last-Event-ID`: `start` replays what is recorded (`?from=0`), `now` goes on from the present. */
export type StreamFrom = 'start' | 'now';

/**
 * Where a stream starts: after `lastEventId` (one it sent), or `from`; `signal` ends it. With
 * `followers`, the live part is read through the follower of the workflow that all the streams given
 * the same `followers` share (the HTTP API's, client/shared-history.ts); without, the stream reads
 * Temporal on its own.
 */
export interface StreamOptions {
  lastEventId?: string;
  from?: StreamFrom;
  signal?: AbortSignal;
  followers?: HistoryFollowers;
}

/** A `Last-Event-ID` that is not one of this stream's ids. */
export class BadEventIdError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BadEventIdError';
  }
}

/**
 * A task event as the stream names it (none for the bookkeeping the stream hides: continue-as-new).
 * `starry run` prints the same TaskEvents (cli/live.ts).
 */
export function streamEventsOf(te: TaskEvent, workflowId: string): StreamEventBody[] {
  return eventsOf(te, workflowId).map((body) => bounded(body, te.kind === 'llm' ? te.ref : undefined));
}

/**
 * An event with its long strings cut to a preview and a list of what was cut (core/stream-preview.ts);
 * a cut `llm` event names its answer in the transcript store, which holds it whole.
 */
export function bounded(body: StreamEventBody, ref?: string): StreamEventBody {
  const { data, cut } = previewOf(body.data);
  if (!cut.length) return body;
  return { ...body, data: { ...data, ...(ref ? { ref } : {}), cut } } as StreamEventBody;
}

function eventsOf(te: TaskEvent, workflowId: string): StreamEventBody[] {
  switch (te.kind) {
    case 'llm-call':
      return [
        {
          event: 'tick',
          data: { tick: te.tick, injected: te.injected.filter((i) => i.label !== 'pain').map((i) => i.text) },
        },
        ...te.injected
          .filter((i) => i.label === 'pain')
          .map((i): StreamEventBody => ({ event: 'pain', data: { tick: te.tick, text: i.text } })),
      ];
    case 'llm':
      return [
        {
          event: 'llm',
          data: {
            tick: te.tick,
            ...(te.text ? { text: te.text } : {}),
            toolCalls: te.toolCalls,
            ...(te.usage ? { usage: te.usage } : {}),
          },
        },
      ];
    case 'llm-failed':
      return [{ event: 'llm', data: { tick: te.tick, toolCalls: [], error: te.message } }];
    case 'tool-call':
      return [{ event: 'tool', data: { tick: te.tick, name: te.name, status: 'started', args: te.args } }];
    case 'tool':
      return [
        {
          event: 'tool',
          data: {
            tick: te.tick,
            name: te.name,
            status: te.ok ? 'ok' : 'error',
            ...(te.error ? { error: te.error } : {}),
          },
        },
      ];
    case 'tool-failed':
      return [{ event: 'tool', data: { tick: te.tick, name: te.name, status: 'failed', message: te.message } }];
    case 'alert':
      return [{ event: 'alert', data: { reason: te.reason, ...(te.alert ? { alert: te.alert } : {}) } }];
    case 'signal': {
      if (te.name === 'message') return messageOf(te.payload as Record<string, unknown> | undefined);
      if (te.name === 'approvalDecided')
        return [{ event: 'approval', data: { decided: te.payload as ApprovalDecision } }];
      return [];
    }
    case 'approval':
      return [{ event: 'approval', data: { agentId: te.agentId, waiting: te.waiting } }];
    case 'state':
      return [
        {
          event: 'state',
          data: { state: te.state as AgentState, ...(te.lockReason ? { lockReason: te.lockReason } : {}) },
        },
      ];
    case 'continued':
      return [];
    case 'summary':
      // The task's result records it (an injection of kind SUMMARY); the stream keeps to the ticks.
      return [];
    case 'end':
      return [
        {
          event: 'end',
          data: {
            workflowId,
            status: te.status,
            ...(te.message ? { message: te.message } : {}),
            ...(te.result ? { result: te.result } : {}),
          },
        },
      ];
  }
}

/** An event of a stream with its position (the stream formats the id). */
export interface Positioned {
  pos: Position;
  body: StreamEventBody;
}

/** The events the client has already: those up to this position (none when undefined). */
export type Seen = Position | undefined;

export const seen = (upTo: Seen, pos: Position): boolean => upTo !== undefined && comparePositions(pos, upTo) <= 0;

/** After every event decoded from one history event. */
const ALL_OF = 9999;

/** Where reading a workflow starts, what of it the client has, and whether it still runs (its chain is open). */
export async function startOf(
  client: Client,
  workflowId: string,
  after: Position | undefined,
  from: StreamFrom,
  signal: AbortSignal | undefined,
  /** For `start`: the current run (an agent's) rather than the first (a task's). */
  startRun: 'first' | 'current',
): Promise<{ from: RunStart; seen: Seen; running: boolean }> {
  const now = await currentRun(client, workflowId, signal);
  const running = now.running;
  if (after) return { from: await runStartedAt(client, workflowId, after.run, signal), seen: after, running };
  if (from === 'start')
    return { from: { runId: startRun === 'first' ? now.firstRunId : now.runId }, seen: undefined, running };
  // Now: what comes next. A closed workflow's last event (its end) is still news to a client that just came.
  const runStart = (await firstEvent(client, workflowId, now.runId, signal)).start;
  const event = now.running ? now.length : now.length - 1;
  return { from: { runId: now.runId, runStart }, seen: { run: runStart, event, k: ALL_OF }, running };
}

/** The positioned events of a task's history, from `from` on (live through `followers` when given). */
export async function* taskEvents(
  client: Client,
  workflowId: string,
  from: RunStart,
  live: boolean,
  signal: AbortSignal | undefined,
  followers?: HistoryFollowers,
): AsyncGenerator<Positioned> {
  const decoder = new TaskEventDecoder();
  for await (const item of readHistory(client, workflowId, { from, live, signal, followers })) {
    let k = 0;
    for (const te of decoder.decode(item.event))
      for (const body of streamEventsOf(te, workflowId)) {
        yield { pos: { run: item.runStart, event: Number(item.event.eventId), k: k++ }, body };
        if (body.event === 'end') return;
      }
  }
}

/**
 * Open a task's stream: checks the task and the `Last-Event-ID` first (so an HTTP error comes before
 * the stream starts), then yields its events until the task ends or `signal` aborts.
 *
 * ```ts
 * const events = await openTaskStream(client, 'agent-a1-task-3', { from: 'start' });
 * for await (const e of events) console.log(e.id, e.event, e.data);
 * ```
 * @throws the SDK's NotFound for an unknown task; BadEventIdError for a `lastEventId` that is not one of its ids.
 */
export async function openTaskStream(
  client: Client,
  workflowId: string,
  opts: StreamOptions,
): Promise<AsyncGenerator<StreamEvent>> {
  const after = opts.lastEventId !== undefined ? taskPosition(opts.lastEventId) : undefined;
  const start = await knownPosition(() => startOf(client, workflowId, after, opts.from ?? 'now', opts.signal, 'first'));
  // A closed task is read as recorded: no follower is started for it.
  const live = start.running;
  return (async function* () {
    for await (const e of taskEvents(client, workflowId, start.from, live, opts.signal, opts.followers)) {
      if (seen(start.seen, e.pos)) continue;
      yield { id: formatPosition(e.pos), ...e.body } as StreamEvent;
    }
  })();
}

function taskPosition(id: string): Position {
  const pos = parsePosition(id);
  if (!pos)
    throw new BadEventIdError(
      `Last-Event-ID "${id.slice(0, 80)}" is not an id of this task's stream (run.event.k, e.g. 1795680000000.12.0): send one this stream sent, or none to start now`,
    );
  return pos;
}

/** What `find` finds; a position that names no run of the workflow is a bad `Last-Event-ID`. */
export async function knownPosition<T>(find: () => Promise<T>): Promise<T> {
  try {
    return await find();
  } catch (err) {
    if (err instanceof UnknownPositionError)
      throw new BadEventIdError(`Last-Event-ID names no run of this workflow: ${err.message}`);
    throw err;
  }
}

/** A human message's event, when the payload is one. */
export function messageOf(m: Record<string, unknown> | undefined): StreamEventBody[] {
  return typeof m?.text === 'string'
    ? [{ event: 'message', data: { text: m.text, ...(typeof m.by === 'string' ? { by: m.by } : {}) } }]
    : [];
}
