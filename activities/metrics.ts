/**
 * Where the LLM and tool activities record their histograms (core/telemetry.ts `METRIC`): the worker's
 * metrics (workers/metrics.ts), when it has them. A call's duration is its attempt's, measured here.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { MetricSpec } from '../core/telemetry';

/**
 * A histogram sink. `workers/metrics.ts` implements it over OpenTelemetry's meter.
 *
 * ```ts
 * meter.record(METRIC.toolDuration, 0.012, toolMetricAttributes('fs.read'));
 * ```
 */
export interface ActivityMeter {
  record(metric: MetricSpec, value: number, attributes: Record<string, string>): void;
}

/**
 * The code of what an attempt threw (`error.type`): `CANCELLED` when the activity was cancelled, else the
 * NormalizedError's, else none (`_OTHER`).
 */
export function thrownCode(err: unknown, cancelled: boolean): { code?: string } {
  if (cancelled) return { code: 'CANCELLED' };
  const detail = err instanceof ApplicationFailure ? (err.details?.[0] as { code?: unknown } | undefined) : undefined;
  return typeof detail?.code === 'string' ? { code: detail.code } : {};
}

/** Seconds since `start` (a `performance.now()`). */
export function secondsSince(start: number): number {
  return (performance.now() - start) / 1000;
}
