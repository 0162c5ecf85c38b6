/**
 * The task's spans and counters, from workflow code. Spans are replay-safe, since a workflow span is
 * exported (through the worker's `exporter` sink, workers/otel.ts) only when it ends in a live activation,
 * with the ids and times it had the first time (ids from the workflow's seeded random, times from
 * workflow time). Counters too: Temporal's workflow `metricMeter` adds nothing while history is replayed.
 * While the workflow does not trace (workflows/otel-interceptors.ts) nor meter, every helper here is a
 * plain call.
 */
import type * as Api from '@opentelemetry/api';
import type { MetricCounter } from '@temporalio/common';
import { ApplicationFailure, ContinueAsNew, isCancellation, metricMeter } from '@temporalio/workflow';
import {
  errorType,
  type Attributes,
  type MetricCount,
  type RemoteSpan,
  type TelemetryEvent,
  EVENT,
} from '../core/telemetry';
import { factsOf } from './activity-facts';
import { TASK_FAILED } from './messages';
import { tracingEnabled } from './otel-interceptors';

export { enableTracing, startContext, tracingEnabled } from './otel-interceptors';

/* eslint-disable @typescript-eslint/no-require-imports */
let api: typeof Api | undefined;
/** `@opentelemetry/api`, evaluated at the first traced span (the bundle carries it either way). */
function otelApi(): typeof Api {
  return (api ??= require('@opentelemetry/api') as typeof Api);
}

/** A span while tracing is on; `undefined` otherwise (every helper takes that). */
export type MaybeSpan = Api.Span | undefined;

/** How a span's failure reads: `error.type` and a message, or `undefined` when it is no failure. */
export type Classify = (err: unknown) => { type: string; message: string } | undefined;

/**
 * A failure's `error.type` is the normalized code the activity boundary put in it; a halt's cancellation
 * is `CANCELLED`; continue-as-new is no failure.
 */
export const classifyFailure: Classify = (err) => {
  if (err instanceof ContinueAsNew) return undefined;
  if (isCancellation(err)) return { type: 'CANCELLED', message: 'cancelled (SYSTEM_HALT)' };
  const { error } = factsOf(err, 'workflow');
  return { type: errorType(error), message: error.message };
};

export interface SpanSpec {
  name: string;
  attributes: Attributes;
  kind?: 'client' | 'internal';
  /** A root span (a new trace), linked to `link` (or `linkTo`, a span named by its ids) when given. */
  root?: boolean;
  link?: Api.Context;
  linkTo?: RemoteSpan;
  /** The parent when not the active span (the run this one continues). */
  parent?: Api.Context;
}

/**
 * Run `fn` in a span that is active while it runs and ends with it; a thrown failure marks the span
 * (status ERROR, `error.type`) as `classify` reads it. Tracing off: `fn(undefined)`.
 *
 * ```ts
 * const answer = await inSpan(chatSpan(config.llm, tick), (span) => llm(request));
 * ```
 */
export function inSpan<T>(spec: SpanSpec, fn: (span: MaybeSpan) => Promise<T>, classify = classifyFailure): Promise<T> {
  if (!tracingEnabled()) return fn(undefined);
  const otel = otelApi();
  const linked =
    (spec.link && otel.trace.getSpanContext(spec.link)) || (spec.linkTo && { ...spec.linkTo, isRemote: true });
  const options: Api.SpanOptions = {
    attributes: spec.attributes,
    kind: spec.kind === 'client' ? otel.SpanKind.CLIENT : otel.SpanKind.INTERNAL,
    ...(spec.root ? { root: true } : {}),
    ...(linked ? { links: [{ context: linked }] } : {}),
  };
  const tracer = otel.trace.getTracer('openstarry');
  const body = async (span: Api.Span): Promise<T> => {
    try {
      return await fn(span);
    } catch (err) {
      markFailed(span, err, classify);
      throw err;
    } finally {
      span.end();
    }
  };
  return spec.parent
    ? tracer.startActiveSpan(spec.name, options, spec.parent, body)
    : tracer.startActiveSpan(spec.name, options, body);
}

/** Mark a span failed by a failure it did not see thrown (the caller caught it). */
export function markFailed(span: MaybeSpan, err: unknown, classify = classifyFailure): void {
  if (!span) return;
  const failure = classify(err);
  if (!failure) return;
  span.setStatus({ code: otelApi().SpanStatusCode.ERROR, message: failure.message });
  span.setAttribute('error.type', failure.type);
}

/** Mark a span failed with a known code (an outcome the workflow decided, not a thrown failure). */
export function markFailedWith(span: MaybeSpan, type: string, message: string): void {
  if (!span) return;
  span.setStatus({ code: otelApi().SpanStatusCode.ERROR, message });
  span.setAttribute('error.type', type);
}

/**
 * Add `TaskRun`'s facts: pain on the tool call's span when there is one (per-call facts stay off the
 * task span, which keeps at most 128 events), the rest on the task span.
 */
export function addEvents(events: readonly TelemetryEvent[], task: MaybeSpan, call?: MaybeSpan): void {
  if (!task) return;
  for (const e of events) (e.name === EVENT.pain && call ? call : task).addEvent(e.name, e.attributes);
}

/** The task span's `classify`: a failed task (TASK_FAILED) and a halt were marked where they were decided. */
export const classifyTaskFailure: Classify = (err) =>
  (err instanceof ApplicationFailure && err.type === TASK_FAILED) || isCancellation(err)
    ? undefined
    : classifyFailure(err);

// Per workflow, like the tracing switch (the SDK evaluates the bundle's modules afresh for each one).
let metered = false;
const counters = new Map<string, MetricCounter>();

/**
 * Count this workflow's facts in the worker's metrics. Call it only on a fact of the history (a local
 * activity's result, the input), so a replay decides the same. Off, no counter is touched: each addition
 * is a call out of the workflow sandbox.
 *
 * ```ts
 * if (listed.telemetry?.metrics) enableMetrics();
 * ```
 */
export function enableMetrics(): void {
  metered = true;
}

/** Whether this workflow counts its facts. */
export function metricsEnabled(): boolean {
  return metered;
}

/**
 * Add `TaskRun`'s counts to the worker's counters (not while replaying: the SDK's meter skips those, so a
 * fact counted once is never counted again by a replay or a worker that picks the task up).
 *
 * ```ts
 * addCounts(run.drainCounts());
 * ```
 */
export function addCounts(counts: readonly MetricCount[]): void {
  if (!metered) return;
  for (const { metric, value, attributes } of counts) {
    let counter = counters.get(metric.name);
    if (!counter)
      counters.set(metric.name, (counter = metricMeter.createCounter(metric.name, metric.unit, metric.description)));
    counter.add(value, attributes);
  }
}
