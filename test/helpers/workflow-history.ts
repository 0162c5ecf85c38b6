/**
 * Reading workflow histories in integration tests: the activities a workflow scheduled (with their
 * decoded inputs), waiting for a history to settle, and replaying it against the current code.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { ToolRequest } from '../../activities/tools';
import type { LlmRequest } from '../../core/llm';
import { replayHistory, type ReplayReport } from '../../dev/replay';

export type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The decoded first argument of every activity of `type` the workflow scheduled, in order. */
export function scheduledInputs<T>(history: History, type: string): T[] {
  return (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a): a is NonNullable<typeof a> => !!a && a.activityType?.name === type)
    .map((a) => defaultPayloadConverter.fromPayload<T>(a.input?.payloads?.[0] ?? {}));
}

export const llmInputs = (history: History) => scheduledInputs<LlmRequest>(history, 'llm');
export const toolInputs = (history: History) => scheduledInputs<ToolRequest>(history, 'tool');

/** Attempt numbers of the completed activities of `type`, in order. */
export function completedAttempts(history: History, type: string): number[] {
  const events = history.events ?? [];
  const typeOf = new Map<string, string>();
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes) typeOf.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
  }
  const startedAttempt = new Map<string, number>();
  for (const e of events) {
    if (e.activityTaskStartedEventAttributes) startedAttempt.set(String(e.eventId), e.activityTaskStartedEventAttributes.attempt ?? 0);
  }
  return events
    .map((e) => e.activityTaskCompletedEventAttributes)
    .filter((a): a is NonNullable<typeof a> => !!a && typeOf.get(String(a.scheduledEventId)) === type)
    .map((a) => startedAttempt.get(String(a.startedEventId)) ?? 0);
}

/** True when no workflow task is scheduled or running: the events after the last completed one are its commands. */
function isIdle(events: HistoryEvent[]): boolean {
  const lastIndex = (has: (e: HistoryEvent) => boolean) => events.reduce((found, e, i) => (has(e) ? i : found), -1);
  return lastIndex((e) => !!e.workflowTaskCompletedEventAttributes) > lastIndex((e) => !!e.workflowTaskScheduledEventAttributes);
}

/**
 * The history of `workflowId` once the workflow is idle (its last workflow task has completed, or the
 * workflow has closed) and `until` holds: a stable snapshot to assert on, replay or record.
 */
export async function settledHistory(client: Client, workflowId: string, until: (h: History) => boolean = () => true, timeoutMs = 30_000): Promise<History> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const events = history.events ?? [];
    const last = events.at(-1);
    const closed = !!(
      last?.workflowExecutionCompletedEventAttributes ||
      last?.workflowExecutionFailedEventAttributes ||
      last?.workflowExecutionTerminatedEventAttributes ||
      last?.workflowExecutionContinuedAsNewEventAttributes
    );
    if ((closed || isIdle(events)) && until(history)) return history;
    if (Date.now() > deadline) throw new Error(`the history of ${workflowId} did not settle in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** True once an activity of `type` has completed in the history. */
export const hasCompleted = (type: string) => (h: History) => completedAttempts(h, type).length > 0;

/** Replay histories against the current workflow bundle: every report must be `ok`. */
export async function replayAll(client: Client, workflowIds: string[]): Promise<ReplayReport[]> {
  const reports: ReplayReport[] = [];
  for (const id of workflowIds) reports.push(await replayHistory(await settledHistory(client, id), id));
  return reports;
}
