/**
 * The live events of a task or an agent, for the HTTP API's Server-Sent Events (docs/API.md#live-events):
 * the task's history decoded by the CLI's own decoder (client/follow.ts), named as the stream names them,
 * each with an id that resumes after it. A task stream's id is its event's Position (`run.event.k`,
 * client/history.ts); an agent stream's is the agent's Position, then `_` and the current task's, so
 * ids increase (agent part first) and a reconnect with `Last-Event-ID` has no gap and no duplicate, also
 * across continue-as-new and a restart of the API.
 */
import type { Client } from '@temporalio/client';
import type { ApprovalDecision, ApprovalsReport } from '../core/approval';
import type { StreamEvent } from '../core/contract';
import { previewOf } from '../core/stream-preview';
import type { AgentState } from '../core/types';
import { TaskEventDecoder, agentStateOf, alertReason, closeOf, decode, type TaskEvent } from './follow';
import {
  comparePositions,
  currentRun,
  firstEvent,
  followHistory,
  formatPosition,
  parsePosition,
  runStartedAt,
  UnknownPositionError,
  type HistoryEvent,
  type Position,
  type RunStart,
} from './history';

/** An event without its id: what one history event means to a person. */
export type StreamEventBody = StreamEvent extends infer E ? (E extends unknown ? Omit<E, 'id'> : never) : never;

/** Where a stream starts without `Last-Event-ID`: `start` replays what is recorded (`?from=0`), `now` goes on from the present. */
export type StreamFrom = 'start' | 'now';

/** Where a stream starts: after `lastEventId` (one it sent), or `from`; `signal` ends it. */
export interface StreamOptions {
  lastEventId?: string;
  from?: StreamFrom;
  signal?: AbortSignal;
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
interface Positioned {
  pos: Position;
  body: StreamEventBody;
}

/** The events the client has already: those up to this position (none when undefined). */
type Seen = Position | undefined;

const seen = (upTo: Seen, pos: Position): boolean => upTo !== undefined && comparePositions(pos, upTo) <= 0;

/** After every event decoded from one history event. */
const ALL_OF = 9999;

/** Where reading a workflow starts, and what of it the client has. */
async function startOf(
  client: Client,
  workflowId: string,
  after: Position | undefined,
  from: StreamFrom,
  signal: AbortSignal | undefined,
  /** For `start`: the current run (an agent's) rather than the first (a task's). */
  startRun: 'first' | 'current',
): Promise<{ from: RunStart; seen: Seen }> {
  const now = await currentRun(client, workflowId, signal);
  if (after) return { from: await runStartedAt(client, workflowId, after.run, signal), seen: after };
  if (from === 'start') return { from: { runId: startRun === 'first' ? now.firstRunId : now.runId }, seen: undefined };
  // Now: what comes next. A closed workflow's last event (its end) is still news to a client that just came.
  const runStart = (await firstEvent(client, workflowId, now.runId, signal)).start;
  const event = now.running ? now.length : now.length - 1;
  return { from: { runId: now.runId, runStart }, seen: { run: runStart, event, k: ALL_OF } };
}

/** The positioned events of a task's history, from `from` on. */
async function* taskEvents(
  client: Client,
  workflowId: string,
  from: RunStart,
  live: boolean,
  signal: AbortSignal | undefined,
): AsyncGenerator<Positioned> {
  const decoder = new TaskEventDecoder();
  for await (const item of followHistory(client, workflowId, { from, live, ...(signal ? { signal } : {}) })) {
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
  return (async function* () {
    for await (const e of taskEvents(client, workflowId, start.from, true, opts.signal)) {
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

async function knownPosition<T>(find: () => Promise<T>): Promise<T> {
  try {
    return await find();
  } catch (err) {
    if (err instanceof UnknownPositionError)
      throw new BadEventIdError(`Last-Event-ID names no run of this workflow: ${err.message}`);
    throw err;
  }
}

// ---- agents ------------------------------------------------------------------------------------------

/** An agent stream's id: the agent's position, and the current task's when a task event was sent since it started. */
export interface AgentCursor {
  agent: Position;
  task?: Position;
}

export const formatAgentCursor = (c: AgentCursor): string =>
  `${formatPosition(c.agent)}${c.task ? `_${formatPosition(c.task)}` : ''}`;

function agentCursor(id: string): AgentCursor {
  const [a, t, more] = id.split('_');
  const agent = parsePosition(a ?? '');
  const task = t === undefined ? undefined : parsePosition(t);
  if (!agent || more !== undefined || (t !== undefined && !task))
    throw new BadEventIdError(
      `Last-Event-ID "${id.slice(0, 80)}" is not an id of this agent's stream (run.event.k, then _run.event.k within a task): send one this stream sent, or none to start now`,
    );
  return task ? { agent, task } : { agent };
}

/** What an agent's history says, for its stream; `startsTask` names the task workflow a `task` event starts. */
interface AgentItem extends Positioned {
  startsTask?: string;
}

/**
 * Turns an agent's history events into stream events: its state changes (with who halted or unlocked
 * it), the tasks it starts, human messages, approvals and its alerts. Feed it every event of a run.
 */
export class AgentEventDecoder {
  private readonly children = new Map<string, { taskId?: string; goal?: string }>();
  private readonly updates = new Map<string, { name: string; input: unknown }>();
  /** The halt or unlock a human sent; it names the state change that follows. */
  private human: { by?: string; note?: string } | undefined;
  /** The task the agent started last, while it runs. */
  running: string | undefined;

  decode(e: HistoryEvent): { bodies: StreamEventBody[]; startsTask?: string } {
    const state = agentStateOf(e);
    if (state) {
      const who = this.human;
      this.human = undefined;
      return {
        bodies: [
          {
            event: 'state',
            data: {
              state: state.state as AgentState,
              ...(state.lockReason ? { lockReason: state.lockReason } : {}),
              ...who,
            },
          },
        ],
      };
    }
    const init = e.startChildWorkflowExecutionInitiatedEventAttributes;
    if (init) {
      const input = decode<{ taskId?: string; goal?: string }>(init.input);
      this.children.set(String(e.eventId), {
        ...(input?.taskId ? { taskId: input.taskId } : {}),
        ...(input?.goal ? { goal: input.goal } : {}),
      });
      return { bodies: [] };
    }
    const started = e.childWorkflowExecutionStartedEventAttributes;
    if (started) {
      const workflowId = started.workflowExecution?.workflowId ?? '';
      const child = this.children.get(String(started.initiatedEventId));
      this.children.delete(String(started.initiatedEventId));
      this.running = workflowId;
      return {
        bodies: [
          {
            event: 'task',
            data: { taskId: child?.taskId ?? workflowId, workflowId, ...(child?.goal ? { goal: child.goal } : {}) },
          },
        ],
        startsTask: workflowId,
      };
    }
    const closedChild =
      e.childWorkflowExecutionCompletedEventAttributes ??
      e.childWorkflowExecutionFailedEventAttributes ??
      e.childWorkflowExecutionCanceledEventAttributes ??
      e.childWorkflowExecutionTerminatedEventAttributes ??
      e.childWorkflowExecutionTimedOutEventAttributes;
    if (closedChild) {
      if (closedChild.workflowExecution?.workflowId === this.running) this.running = undefined;
      return { bodies: [] };
    }
    const signal = e.workflowExecutionSignaledEventAttributes;
    if (signal) {
      const payload = decode<Record<string, unknown>>(signal.input);
      switch (signal.signalName) {
        case 'SYSTEM_HALT':
        case 'STOP':
        case 'admin:unlock':
          this.human = whoOf(payload);
          return { bodies: [] };
        case 'message':
          return { bodies: messageOf(payload) };
        case 'approvals': {
          const report = payload as unknown as ApprovalsReport | undefined;
          return { bodies: report?.waiting?.length ? [{ event: 'approval', data: { waiting: report.waiting } }] : [] };
        }
      }
      return { bodies: [] };
    }
    const accepted = e.workflowExecutionUpdateAcceptedEventAttributes;
    if (accepted) {
      const req = accepted.acceptedRequest;
      const name = req?.input?.name ?? '';
      const input = decode<Record<string, unknown>>(req?.input?.args);
      this.updates.set(req?.meta?.updateId ?? '', { name, input });
      if (name === 'admin:unlock') this.human = whoOf(input);
      return { bodies: [] };
    }
    const completed = e.workflowExecutionUpdateCompletedEventAttributes;
    if (completed) {
      const id = completed.meta?.updateId ?? '';
      const update = this.updates.get(id);
      this.updates.delete(id);
      if (!update || !completed.outcome?.success) return { bodies: [] };
      if (update.name === 'sendMessage') return { bodies: messageOf(update.input as Record<string, unknown>) };
      if (update.name === 'decideApproval') {
        const decided = decode<ApprovalDecision>(completed.outcome.success);
        return { bodies: decided ? [{ event: 'approval', data: { decided } }] : [] };
      }
      return { bodies: [] };
    }
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'alert') {
      const alert = decode<{ reason?: { code?: string; message?: string } }>(scheduled.input);
      return {
        bodies: [{ event: 'alert', data: { reason: alertReason(alert), alert } }],
      };
    }
    // The agent's own workflow closing (not continuing as new): the end of its stream.
    const closed = closeOf(e);
    return closed ? { bodies: [{ event: 'end', data: { status: closed.status } }] } : { bodies: [] };
  }
}

function whoOf(payload: Record<string, unknown> | undefined): { by?: string; note?: string } {
  return {
    ...(typeof payload?.by === 'string' ? { by: payload.by } : {}),
    ...(typeof payload?.note === 'string' ? { note: payload.note } : {}),
  };
}

function messageOf(m: Record<string, unknown> | undefined): StreamEventBody[] {
  return typeof m?.text === 'string'
    ? [{ event: 'message', data: { text: m.text, ...(typeof m.by === 'string' ? { by: m.by } : {}) } }]
    : [];
}

/** Task events an agent stream leaves to its agent's history (which has them too: no event twice). */
const FROM_AGENT = new Set(['state', 'message', 'approval']);

/**
 * Open an agent's stream: its own events and, from each task it starts, the task's events, until the
 * agent's workflow closes or `signal` aborts. `from: 'start'` begins at its current run's start.
 *
 * ```ts
 * for await (const e of await openAgentStream(client, 'agent-a1', {})) console.log(e.event, e.data);
 * ```
 * @throws the SDK's NotFound for an unknown agent; BadEventIdError for a `lastEventId` that is not one of its ids.
 */
export async function openAgentStream(
  client: Client,
  agentWorkflowId: string,
  opts: StreamOptions,
): Promise<AsyncGenerator<StreamEvent>> {
  const after = opts.lastEventId !== undefined ? agentCursor(opts.lastEventId) : undefined;
  const from = opts.from ?? 'now';
  // Its two sources poll concurrently: when the consumer leaves, the poll in flight is cancelled too.
  const leave = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, leave.signal]) : leave.signal;
  const events = await openMerged(client, agentWorkflowId, after, from, signal);
  return (async function* () {
    try {
      yield* events;
    } finally {
      leave.abort();
    }
  })();
}

/** The merged stream, its start and its running task found (the checks that come before a response). */
async function openMerged(
  client: Client,
  agentWorkflowId: string,
  after: AgentCursor | undefined,
  from: StreamFrom,
  signal: AbortSignal,
): Promise<AsyncGenerator<StreamEvent>> {
  const start = await knownPosition(() => startOf(client, agentWorkflowId, after?.agent, from, signal, 'current'));
  if (!start.seen) return merged(client, agentWorkflowId, start, undefined, signal);
  // The task running at the start, read from what is recorded up to it.
  const decoder = new AgentEventDecoder();
  for await (const item of followHistory(client, agentWorkflowId, {
    from: start.from,
    live: false,
    signal,
  })) {
    if (!seen(start.seen, { run: item.runStart, event: Number(item.event.eventId), k: 0 })) break;
    decoder.decode(item.event);
  }
  const workflowId = decoder.running;
  if (!workflowId) return merged(client, agentWorkflowId, start, undefined, signal);
  // Where in it the client is: after its id's task part, at the present (`now`), or nowhere yet (its start).
  const task = after?.task
    ? await knownPosition(() => startOf(client, workflowId, after.task, 'now', signal, 'first'))
    : after
      ? { from: { runId: '' }, seen: undefined }
      : await startOf(client, workflowId, undefined, 'now', signal, 'first');
  return merged(client, agentWorkflowId, start, { workflowId, start: task }, signal);
}

/**
 * The agent's events and its current task's, as they come: each source in its own order, ids increasing
 * (an agent event moves the agent part; a task event the task part).
 */
async function* merged(
  client: Client,
  agentWorkflowId: string,
  start: { from: RunStart; seen: Seen },
  firstTask: { workflowId: string; start: { from: RunStart; seen: Seen } } | undefined,
  signal: AbortSignal | undefined,
): AsyncGenerator<StreamEvent> {
  // Where the client is: its id's parts, or the present.
  let agentPos = start.seen;
  let taskPos = firstTask?.start.seen;
  const decoder = new AgentEventDecoder();
  async function* agentSource(): AsyncGenerator<AgentItem> {
    for await (const item of followHistory(client, agentWorkflowId, {
      from: start.from,
      live: true,
      ...(signal ? { signal } : {}),
    })) {
      const out = decoder.decode(item.event);
      let k = 0;
      for (const body of out.bodies.map((b) => bounded(b))) {
        const pos = { run: item.runStart, event: Number(item.event.eventId), k: k++ };
        if (seen(start.seen, pos)) continue;
        yield { pos, body, ...(out.startsTask && body.event === 'task' ? { startsTask: out.startsTask } : {}) };
      }
    }
  }
  const taskSource = (t: { workflowId: string; start: { from: RunStart; seen: Seen } }) =>
    (async function* () {
      // A task found by its start event may not have a run id yet: its first run.
      const from = t.start.from.runId
        ? t.start.from
        : { runId: (await currentRun(client, t.workflowId, signal)).firstRunId };
      for await (const e of taskEvents(client, t.workflowId, from, true, signal)) {
        if (seen(t.start.seen, e.pos) || FROM_AGENT.has(e.body.event)) continue;
        yield e;
      }
    })();

  const agents = agentSource();
  let task = firstTask ? taskSource(firstTask) : undefined;
  // Each source's next item, tagged once (a race per event must not pile reactions on a long poll).
  const nextOf = <T, F extends 'agent' | 'task'>(it: AsyncGenerator<T>, from: F) =>
    it.next().then((r) => ({ from, r }));
  let agentNext = nextOf(agents, 'agent');
  let taskNext = task && nextOf(task, 'task');
  const id = () =>
    formatAgentCursor({ agent: agentPos ?? { run: 0, event: 0, k: 0 }, ...(taskPos ? { task: taskPos } : {}) });
  for (;;) {
    const next = await (taskNext ? Promise.race([agentNext, taskNext]) : agentNext);
    if (next.from === 'task') {
      if (next.r.done) {
        task = undefined;
        taskNext = undefined;
        continue;
      }
      taskPos = next.r.value.pos;
      yield { id: id(), ...next.r.value.body } as StreamEvent;
      taskNext = task && nextOf(task, 'task');
      continue;
    }
    if (next.r.done) return;
    const item = next.r.value;
    if (item.startsTask) {
      // The previous task has ended (the agent runs one at a time): the rest of its events come first.
      while (taskNext) {
        const { r } = await taskNext;
        if (r.done) break;
        taskPos = r.value.pos;
        yield { id: id(), ...r.value.body } as StreamEvent;
        taskNext = task && nextOf(task, 'task');
      }
      task = taskSource({ workflowId: item.startsTask, start: { from: { runId: '' }, seen: undefined } });
      taskNext = nextOf(task, 'task');
      taskPos = undefined;
    }
    agentPos = item.pos;
    yield { id: id(), ...item.body } as StreamEvent;
    if (item.body.event === 'end') return;
    agentNext = nextOf(agents, 'agent');
  }
}
