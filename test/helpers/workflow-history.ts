/**
 * Reading workflow histories in integration tests. The history is the proof (a cancellation
 * acknowledged, a tool never scheduled, an attempt number), not timing: events by kind, each
 * activity's lifecycle (scheduled → cancel requested → cancelled) and decoded input, waiting until an
 * activity is in flight or the history has settled, and replaying it against the current code.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { ToolRequest } from '../../activities/tools';
import type { LlmCallInput, LlmRequest } from '../../core/llm';
import { storeFromEnv } from '../../activities/store';
import { transcriptStore } from '../../activities/transcript';
import { eventually, until } from '../../dev/poll';
import { replayHistory, type ReplayReport } from '../../dev/replay';

export type History = temporal.api.history.v1.IHistory;
export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
export type TracedEvent = HistoryEvent & { kind: string };

/** The decoded first argument of every activity of `type` the workflow scheduled, in order. */
export function scheduledInputs<T>(history: History, type: string): T[] {
  return (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a): a is NonNullable<typeof a> => !!a && a.activityType?.name === type)
    .map((a) => firstPayload<T>(a.input) as T);
}

/** The LLM activity inputs as recorded: a context delta of references into the transcript store. */
export const llmInputs = (history: History) => scheduledInputs<LlmCallInput>(history, 'llm');

/** An LLM activity input as its provider receives it, resolved through the worker's store as the activity does. */
export async function resolveLlmInput(input: LlmCallInput): Promise<LlmRequest> {
  return (await transcriptStore(storeFromEnv()).resolve(input)).request;
}

/** The requests every LLM call of the history sent its provider, in order. */
export const llmRequests = (history: History): Promise<LlmRequest[]> =>
  Promise.all(llmInputs(history).map(resolveLlmInput));
export const toolInputs = (history: History) => scheduledInputs<ToolRequest>(history, 'tool');

/** Attempt numbers of the completed activities of `type`, in order. */
export function completedAttempts(history: History, type: string): number[] {
  const events = history.events ?? [];
  const typeOf = new Map<string, string>();
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes)
      typeOf.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
  }
  const startedAttempt = new Map<string, number>();
  for (const e of events) {
    if (e.activityTaskStartedEventAttributes)
      startedAttempt.set(String(e.eventId), e.activityTaskStartedEventAttributes.attempt ?? 0);
  }
  return events
    .map((e) => e.activityTaskCompletedEventAttributes)
    .filter((a): a is NonNullable<typeof a> => !!a && typeOf.get(String(a.scheduledEventId)) === type)
    .map((a) => startedAttempt.get(String(a.startedEventId)) ?? 0);
}

/** True when no workflow task is scheduled or running: the events after the last completed one are its commands. */
function isIdle(events: HistoryEvent[]): boolean {
  const lastIndex = (has: (e: HistoryEvent) => boolean) => events.reduce((found, e, i) => (has(e) ? i : found), -1);
  return (
    lastIndex((e) => !!e.workflowTaskCompletedEventAttributes) >
    lastIndex((e) => !!e.workflowTaskScheduledEventAttributes)
  );
}

/**
 * The history of `workflowId` once the workflow is idle (its last workflow task has completed, or the
 * workflow has closed) and `settled` holds: a stable snapshot to assert on, replay or record.
 */
export async function settledHistory(
  client: Client,
  workflowId: string,
  settled: (h: History) => boolean = () => true,
  timeoutMs = 30_000,
): Promise<History> {
  return eventually(
    `the history of ${workflowId} to settle`,
    async () => {
      const history = await client.workflow.getHandle(workflowId).fetchHistory();
      const events = history.events ?? [];
      const last = events.at(-1);
      const closed = !!(
        last?.workflowExecutionCompletedEventAttributes ||
        last?.workflowExecutionFailedEventAttributes ||
        last?.workflowExecutionTerminatedEventAttributes ||
        last?.workflowExecutionContinuedAsNewEventAttributes
      );
      return (closed || isIdle(events)) && settled(history) ? history : undefined;
    },
    timeoutMs,
    100,
  );
}

/** True once an activity of `type` has completed in the history. */
export const hasCompleted = (type: string) => (h: History) => completedAttempts(h, type).length > 0;

/** Replay histories against the current workflow bundle: every report must be `ok`. */
export async function replayAll(client: Client, workflowIds: string[]): Promise<ReplayReport[]> {
  const reports: ReplayReport[] = [];
  for (const id of workflowIds) reports.push(await replayHistory(await settledHistory(client, id), id));
  return reports;
}

/** The event's kind from its attributes field: `activityTaskScheduled`, `workflowExecutionSignaled`, … */
export function kindOf(e: HistoryEvent): string {
  const key = Object.keys(e).find(
    (k) => k.endsWith('EventAttributes') && (e as unknown as Record<string, unknown>)[k] != null,
  );
  return key ? key.slice(0, -'EventAttributes'.length) : 'unknown';
}

/** The events of one run (the latest when `runId` is omitted), each with its kind. */
export async function historyOf(client: Client, workflowId: string, runId?: string): Promise<TracedEvent[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (history.events ?? []).map((e) => Object.assign(e, { kind: kindOf(e) }));
}

/** Decode the first payload of a list (an activity's input, an update's argument, a workflow's input). */
export function firstPayload<T = unknown>(payloads: { payloads?: Payload[] | null } | null | undefined): T | undefined {
  const p = payloads?.payloads?.[0];
  return p ? defaultPayloadConverter.fromPayload<T>(p) : undefined;
}

/** An activity's lifecycle in a history: what was scheduled, and the kinds of the events that followed. */
export interface ActivityTrace {
  scheduledEventId: number;
  activityType: string;
  input: unknown;
  /** `scheduled`, then e.g. `started`, `cancelRequested`, `canceled`, `completed`, `failed`. */
  events: string[];
}

/** Every activity of a history, in scheduling order. */
export function activitiesIn(events: TracedEvent[]): ActivityTrace[] {
  const traces = new Map<number, ActivityTrace>();
  for (const e of events) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const id = Number(e.eventId);
      traces.set(id, {
        scheduledEventId: id,
        activityType: scheduled.activityType?.name ?? '',
        input: firstPayload(scheduled.input),
        events: ['scheduled'],
      });
      continue;
    }
    const attrs = (e as unknown as Record<string, unknown>)[`${e.kind}EventAttributes`] as
      { scheduledEventId?: unknown } | undefined;
    if (e.kind.startsWith('activityTask') && attrs?.scheduledEventId != null) {
      const step = e.kind.slice('activityTask'.length);
      traces.get(Number(attrs.scheduledEventId))?.events.push(step.charAt(0).toLowerCase() + step.slice(1));
    }
  }
  return [...traces.values()];
}

/** Event id of the first event of `kind` that matches `pred`. */
export function eventIdOf(
  events: TracedEvent[],
  kind: string,
  pred: (e: HistoryEvent) => boolean = () => true,
): number | undefined {
  const e = events.find((x) => x.kind === kind && pred(x));
  return e ? Number(e.eventId) : undefined;
}

/** PENDING_ACTIVITY_STATE_STARTED: a worker picked the activity up and it runs. */
const STARTED = 2;

/** True when the workflow has a running activity of `activityType` (not just scheduled). */
export async function isActivityRunning(client: Client, workflowId: string, activityType: string): Promise<boolean> {
  try {
    const d = await client.workflow.getHandle(workflowId).describe();
    return (d.raw.pendingActivities ?? []).some((p) => p.activityType?.name === activityType && p.state === STARTED);
  } catch {
    return false; // the workflow is not there yet
  }
}

/** Wait until the workflow's activity of `activityType` is in flight. */
export async function activityRunning(
  client: Client,
  workflowId: string,
  activityType: string,
  everyMs = 50,
): Promise<void> {
  await until(
    `a running ${activityType} activity in ${workflowId}`,
    () => isActivityRunning(client, workflowId, activityType),
    60_000,
    everyMs,
  );
}
