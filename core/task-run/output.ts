/**
 * What a task run hands on (docs/ARCHITECTURE.md#workflows): its output when it ends (the result,
 * bounded so a completion never passes Temporal's payload limit; the counters; a suspended run's
 * checkpoint; the messages the model never saw), the next run's input when the task continues as new,
 * and what the transcript store holds of it.
 */
import { fitResult } from '../compact';
import { assembleContext } from '../context';
import type { ToolSpec } from '../llm';
import { LIMITS } from '../payloads';
import type { TaskCheckpoint, TaskResult } from '../types';
import { carried } from './checkpoint';
import type { ContextWindow } from './context-window';
import type { RunInbox } from './inbox';
import type { Continued, TaskEnd, TaskRunInput, TaskRunOutput } from './io';
import { soFar, type RunView } from './reports';

/** The run's books, as its output reads them. */
export interface RunParts extends RunView {
  inbox: RunInbox;
  window: ContextWindow;
  /** The tools the worker listed for the task (absent: the built-in ones). */
  tools: ToolSpec[] | undefined;
}

/**
 * The run's output for `end`: the result (bounded), the counters, a SUSPENDED run's checkpoint (the
 * anchored head and the window only: that is all a resumed task sees again) and the undelivered messages.
 */
export function closed(run: RunParts, end: TaskEnd): TaskRunOutput {
  const { outcome, agentState, error, finalText, lock } = end;
  const { store } = run.window.data;
  const reason = lock?.reason ?? end.reason;
  const result = fitResult(
    {
      ...soFar(run),
      outcome,
      agentState,
      ...(error ? { error } : {}),
      ...(finalText !== undefined ? { finalText } : {}),
      ...(reason ? { reason } : {}),
      ...(store ? { transcript: transcript(run.checkpoint) } : {}),
    },
    LIMITS.taskResultBytes,
  );
  const out: TaskRunOutput = {
    result,
    counters: run.counters.data.counters,
    runTokens: run.spend.data.runTokens,
    ...run.spend.reported(),
  };
  if (lock) out.lock = lock;
  if (outcome === 'SUSPENDED') out.checkpoint = store ? handedOn(run) : inlineWindow(run);
  const undelivered = run.inbox.take();
  if (undelivered.length) out.undelivered = undelivered;
  return out;
}

/**
 * The next run's input when the task continues as new: the checkpoint (bounded: the context still to
 * send and the newest records), the counters, and what this run had counted, so neither the loop cap,
 * the budget nor the message allowance starts over.
 */
export function continuation(run: RunParts): TaskRunInput {
  const checkpoint = handedOn(run);
  const { spend, counters } = run;
  const continued: Continued = {
    runTokens: spend.data.runTokens,
    ...spend.reported(),
    allowanceStart: counters.data.allowanceStart,
    received: run.inbox.data.received,
    omitted: { ...counters.data.omitted },
    ...counters.lastError(),
  };
  const { messages: _pending, ...rest } = run.input;
  const messages = run.inbox.take();
  return {
    ...rest,
    counters: counters.data.counters,
    checkpoint,
    continued,
    ...(messages.length ? { messages } : {}),
    ...(run.tools ? { tools: run.tools } : {}),
  };
}

/**
 * What the transcript store holds of a run (store mode): the manifest of the last call's context with
 * its answer, and the entries after it. `starry logs --transcript` resolves it.
 */
export function transcript(cp: TaskCheckpoint): NonNullable<TaskResult['transcript']> {
  type Tail = NonNullable<TaskResult['transcript']>['tail'];
  const tail = cp.messages.slice(cp.sent?.to ?? 0) as unknown as Tail;
  return { ...(cp.sent ? { manifest: cp.sent.ref } : {}), tail };
}

/** The checkpoint handed on, its dropped records counted as omitted. */
function handedOn(run: RunParts): TaskCheckpoint {
  const { checkpoint, dropped } = carried(run.checkpoint);
  run.counters.omit(dropped);
  return checkpoint;
}

/** Without the store: the checkpoint with its messages cut to the anchored head and the window. */
function inlineWindow(run: RunParts): TaskCheckpoint {
  const cp = run.checkpoint;
  return { ...cp, messages: assembleContext({ messages: cp.messages, window: run.input.config.contextWindow }) };
}
