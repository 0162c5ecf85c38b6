/**
 * A task run's telemetry buffer (docs/OBSERVABILITY.md): the facts for the task's trace (pain, breakers,
 * halt, approvals) and the counts for the worker's metrics (ticks, pain, trips, halts, the end), recorded
 * where the run decides them and drained by the task workflow, which adds them to its span and meters
 * when its worker traces and meters and drops them otherwise. Plain data.
 */
import { countsOf, type MetricCount, type TelemetryEvent } from '../telemetry';

export interface TelemetryData {
  /** Facts for the task's trace since the workflow last drained them, oldest first. */
  events: TelemetryEvent[];
  /** Counter additions for the task's metrics since it last drained them. */
  counts: MetricCount[];
}

export class TelemetryBuffer {
  constructor(readonly data: TelemetryData = { events: [], counts: [] }) {}

  /** Facts for the trace, and what each adds to the metrics. */
  record(...events: TelemetryEvent[]): void {
    this.data.events.push(...events);
    for (const e of events) this.data.counts.push(...countsOf(e));
  }

  /** A fact for the trace alone (an approval asked or decided: the metrics do not count those). */
  trace(event: TelemetryEvent): void {
    this.data.events.push(event);
  }

  /** Counter additions with no trace fact of their own (a tick, the run's end). */
  count(...counts: MetricCount[]): void {
    this.data.counts.push(...counts);
  }

  /** The facts recorded since the last call, oldest first; the buffer keeps none of them. */
  drainEvents(): TelemetryEvent[] {
    return this.data.events.splice(0);
  }

  /** The counts recorded since the last call; the buffer keeps none of them. */
  drainCounts(): MetricCount[] {
    return this.data.counts.splice(0);
  }
}
