/**
 * An agent's live events, for the HTTP API's Server-Sent Events (docs/API.md#live-events): its own
 * history's (state changes with who halted or unlocked it, the tasks it starts, human messages,
 * approvals, alerts) merged with those of the task it runs. An event's id is the agent's Position, then
 * `_` and the current task's (client/event-stream.ts has a task's stream and the parts both share).
 */
import type { Client } from '@temporalio/client';
import type { ApprovalDecision, ApprovalsReport } from '../core/approval';
import type { StreamEvent } from '../core/contract';
import type { AgentState } from '../core/types';
import {
  BadEventIdError,
  bounded,
  knownPosition,
  messageOf,
  seen,
  startOf,
  taskEvents,
  type Positioned,
  type Seen,
  type StreamEventBody,
  type StreamFrom,
  type StreamOptions,
} from './event-stream';
import { agentStateOf, alertReason, closeOf, decode } from './follow';
import {
  currentRun,
  followHistory,
  formatPosition,
  parsePosition,
  type HistoryEvent,
  type Position,
  type RunStart,
} from './history';
import { readHistory, type HistoryFollowers } from './shared-history';

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

/** The attributes of one kind of history event. */
type Attributes<K extends keyof HistoryEvent> = NonNullable<HistoryEvent[K]>;

/** Nothing for the stream. */
const NONE: { bodies: StreamEventBody[] } = { bodies: [] };

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
    if (state) return { bodies: [this.stateChanged(state)] };
    const init = e.startChildWorkflowExecutionInitiatedEventAttributes;
    if (init) {
      const input = decode<{ taskId?: string; goal?: string }>(init.input);
      this.children.set(String(e.eventId), {
        ...(input?.taskId ? { taskId: input.taskId } : {}),
        ...(input?.goal ? { goal: input.goal } : {}),
      });
      return NONE;
    }
    const started = e.childWorkflowExecutionStartedEventAttributes;
    if (started) return this.taskStarted(started);
    const closedChild =
      e.childWorkflowExecutionCompletedEventAttributes ??
      e.childWorkflowExecutionFailedEventAttributes ??
      e.childWorkflowExecutionCanceledEventAttributes ??
      e.childWorkflowExecutionTerminatedEventAttributes ??
      e.childWorkflowExecutionTimedOutEventAttributes;
    if (closedChild) {
      if (closedChild.workflowExecution?.workflowId === this.running) this.running = undefined;
      return NONE;
    }
    const signal = e.workflowExecutionSignaledEventAttributes;
    if (signal) return { bodies: this.signalled(signal) };
    const accepted = e.workflowExecutionUpdateAcceptedEventAttributes;
    if (accepted) {
      const req = accepted.acceptedRequest;
      const name = req?.input?.name ?? '';
      const input = decode<Record<string, unknown>>(req?.input?.args);
      this.updates.set(req?.meta?.updateId ?? '', { name, input });
      if (name === 'admin:unlock') this.human = whoOf(input);
      return NONE;
    }
    const completed = e.workflowExecutionUpdateCompletedEventAttributes;
    if (completed) return { bodies: this.updated(completed) };
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'alert') {
      const alert = decode<{ reason?: { code?: string; message?: string } }>(scheduled.input);
      return { bodies: [{ event: 'alert', data: { reason: alertReason(alert), alert } }] };
    }
    // The agent's own workflow closing (not continuing as new): the end of its stream.
    const closed = closeOf(e);
    return closed ? { bodies: [{ event: 'end', data: { status: closed.status } }] } : NONE;
  }

  /** A state change, named with the human whose halt or unlock brought it. */
  private stateChanged(state: { state: string; lockReason?: string }): StreamEventBody {
    const who = this.human;
    this.human = undefined;
    return {
      event: 'state',
      data: {
        state: state.state as AgentState,
        ...(state.lockReason ? { lockReason: state.lockReason } : {}),
        ...who,
      },
    };
  }

  /** A task the agent started: it runs now. */
  private taskStarted(started: Attributes<'childWorkflowExecutionStartedEventAttributes'>): {
    bodies: StreamEventBody[];
    startsTask: string;
  } {
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

  /** A signal to the agent: a human's halt or unlock (remembered for the state change), a message, approvals. */
  private signalled(signal: Attributes<'workflowExecutionSignaledEventAttributes'>): StreamEventBody[] {
    const payload = decode<Record<string, unknown>>(signal.input);
    switch (signal.signalName) {
      case 'SYSTEM_HALT':
      case 'STOP':
      case 'admin:unlock':
        this.human = whoOf(payload);
        return [];
      case 'message':
        return messageOf(payload);
      case 'approvals': {
        const report = payload as unknown as ApprovalsReport | undefined;
        return report?.waiting?.length ? [{ event: 'approval', data: { waiting: report.waiting } }] : [];
      }
    }
    return [];
  }

  /** An update the agent accepted completed: a message it took, an approval decided. */
  private updated(completed: Attributes<'workflowExecutionUpdateCompletedEventAttributes'>): StreamEventBody[] {
    const id = completed.meta?.updateId ?? '';
    const update = this.updates.get(id);
    this.updates.delete(id);
    if (!update || !completed.outcome?.success) return [];
    if (update.name === 'sendMessage') return messageOf(update.input as Record<string, unknown>);
    if (update.name === 'decideApproval') {
      const decided = decode<ApprovalDecision>(completed.outcome.success);
      return decided ? [{ event: 'approval', data: { decided } }] : [];
    }
    return [];
  }
}

function whoOf(payload: Record<string, unknown> | undefined): { by?: string; note?: string } {
  return {
    ...(typeof payload?.by === 'string' ? { by: payload.by } : {}),
    ...(typeof payload?.note === 'string' ? { note: payload.note } : {}),
  };
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
  const events = await openMerged({ client, signal, followers: opts.followers }, agentWorkflowId, after, from);
  return (async function* () {
    try {
      yield* events;
    } finally {
      leave.abort();
    }
  })();
}

/** Where a source's reading starts, and what of it the client has. */
type SourceStart = { from: RunStart; seen: Seen };
/** How a stream reads: its client, the signal that ends it, the followers it shares (client/shared-history.ts). */
type Reading = { client: Client; signal: AbortSignal | undefined; followers: HistoryFollowers | undefined };
/** A task's source: its workflow and where its reading starts. */
type TaskStart = { workflowId: string; start: SourceStart };

/** The merged stream, its start and its running task found (the checks that come before a response). */
async function openMerged(
  reading: Reading,
  agentWorkflowId: string,
  after: AgentCursor | undefined,
  from: StreamFrom,
): Promise<AsyncGenerator<StreamEvent>> {
  const { client, signal } = reading;
  const start = await knownPosition(() => startOf(client, agentWorkflowId, after?.agent, from, signal, 'current'));
  if (!start.seen) return merged(reading, agentWorkflowId, start, undefined);
  // The task running at the start, read from what is recorded up to it.
  const decoder = new AgentEventDecoder();
  for await (const item of followHistory(client, agentWorkflowId, {
    from: start.from,
    live: false,
    ...(signal ? { signal } : {}),
  })) {
    if (!seen(start.seen, { run: item.runStart, event: Number(item.event.eventId), k: 0 })) break;
    decoder.decode(item.event);
  }
  const workflowId = decoder.running;
  if (!workflowId) return merged(reading, agentWorkflowId, start, undefined);
  // Where in it the client is: after its id's task part, at the present (`now`), or nowhere yet (its start).
  const task = after?.task
    ? await knownPosition(() => startOf(client, workflowId, after.task, 'now', signal, 'first'))
    : after
      ? { from: { runId: '' }, seen: undefined }
      : await startOf(client, workflowId, undefined, 'now', signal, 'first');
  return merged(reading, agentWorkflowId, start, { workflowId, start: task });
}

/** The agent's own events, positioned, from `start` on (those the client has left out). */
async function* agentSource(
  { client, signal, followers }: Reading,
  agentWorkflowId: string,
  start: SourceStart,
): AsyncGenerator<AgentItem> {
  const decoder = new AgentEventDecoder();
  for await (const item of readHistory(client, agentWorkflowId, { from: start.from, live: true, signal, followers })) {
    const out = decoder.decode(item.event);
    let k = 0;
    for (const body of out.bodies.map((b) => bounded(b))) {
      const pos = { run: item.runStart, event: Number(item.event.eventId), k: k++ };
      if (seen(start.seen, pos)) continue;
      yield { pos, body, ...(out.startsTask && body.event === 'task' ? { startsTask: out.startsTask } : {}) };
    }
  }
}

/** A task's events for its agent's stream, from `t`'s start on, but those the agent's history has too. */
async function* taskSource({ client, signal, followers }: Reading, t: TaskStart): AsyncGenerator<Positioned> {
  // A task found by its start event may not have a run id yet: its first run.
  const from = t.start.from.runId
    ? t.start.from
    : { runId: (await currentRun(client, t.workflowId, signal)).firstRunId };
  for await (const e of taskEvents(client, t.workflowId, from, true, signal, followers)) {
    if (seen(t.start.seen, e.pos) || FROM_AGENT.has(e.body.event)) continue;
    yield e;
  }
}

/**
 * The agent's events and its current task's, as they come: each source in its own order, ids increasing
 * (an agent event moves the agent part; a task event the task part).
 */
async function* merged(
  reading: Reading,
  agentWorkflowId: string,
  start: SourceStart,
  firstTask: TaskStart | undefined,
): AsyncGenerator<StreamEvent> {
  // Where the client is: its id's parts, or the present.
  let agentPos = start.seen;
  let taskPos = firstTask?.start.seen;
  const agents = agentSource(reading, agentWorkflowId, start);
  let task = firstTask ? taskSource(reading, firstTask) : undefined;
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
      task = taskSource(reading, { workflowId: item.startsTask, start: { from: { runId: '' }, seen: undefined } });
      taskNext = nextOf(task, 'task');
      taskPos = undefined;
    }
    agentPos = item.pos;
    yield { id: id(), ...item.body } as StreamEvent;
    if (item.body.event === 'end') return;
    agentNext = nextOf(agents, 'agent');
  }
}
