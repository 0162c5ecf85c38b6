/**
 * Tracing what a workflow did from its history, for the human-override tests: events by kind,
 * each activity's lifecycle (scheduled → cancel requested → cancelled), payloads decoded, and waiting
 * until an activity is in flight. The history is the proof (a cancellation acknowledged, a tool never
 * scheduled), not timing.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
export type TracedEvent = HistoryEvent & { kind: string };

/** The event's kind from its attributes field: `activityTaskScheduled`, `workflowExecutionSignaled`, … */
export function kindOf(e: HistoryEvent): string {
  const key = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as unknown as Record<string, unknown>)[k] != null);
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
      traces.set(id, { scheduledEventId: id, activityType: scheduled.activityType?.name ?? '', input: firstPayload(scheduled.input), events: ['scheduled'] });
      continue;
    }
    const attrs = (e as unknown as Record<string, unknown>)[`${e.kind}EventAttributes`] as { scheduledEventId?: unknown } | undefined;
    if (e.kind.startsWith('activityTask') && attrs?.scheduledEventId != null) {
      const step = e.kind.slice('activityTask'.length);
      traces.get(Number(attrs.scheduledEventId))?.events.push(step.charAt(0).toLowerCase() + step.slice(1));
    }
  }
  return [...traces.values()];
}

/** Event id of the first event of `kind` that matches `pred`. */
export function eventIdOf(events: TracedEvent[], kind: string, pred: (e: HistoryEvent) => boolean = () => true): number | undefined {
  const e = events.find((x) => x.kind === kind && pred(x));
  return e ? Number(e.eventId) : undefined;
}

/** Poll `probe` until it returns something other than undefined; fail after `timeoutMs`, naming `what`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
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
export async function activityRunning(client: Client, workflowId: string, activityType: string, everyMs = 50): Promise<void> {
  await eventually(`a running ${activityType} activity in ${workflowId}`, async () => ((await isActivityRunning(client, workflowId, activityType)) ? true : undefined), 60_000, everyMs);
}
