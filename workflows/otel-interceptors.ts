/**
 * Temporal's OpenTelemetry workflow interceptors (`@temporalio/interceptors-opentelemetry`), dormant: always
 * in the bundle (its hash is the worker's build id, so a worker with tracing on runs the same version as
 * one without), evaluated and run only once the workflow turned tracing on from a fact in its history
 * (`enableTracing`, called by workflows/telemetry.ts). Running, they cost every activity call worker CPU
 * even with nothing exported; dormant, nothing.
 *
 * On, an activity call and a continue-as-new carry the active span's context in the `_tracer-data` header
 * (the activity's `RunActivity` span and the next run's task span are its children), and workflow log
 * lines get the trace and span ids.
 */
import type { Headers } from '@temporalio/common';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import type { Context } from '@opentelemetry/api';
import type * as OtelWorkflow from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type * as OtelInstrumentation from '@temporalio/interceptors-opentelemetry/lib/instrumentation';

/* eslint-disable @typescript-eslint/no-require-imports */

interface Impl {
  outbound: OtelWorkflow.OpenTelemetryOutboundInterceptor;
  internals: OtelWorkflow.OpenTelemetryInternalsInterceptor;
  instrumentation: typeof OtelInstrumentation;
}

// Per workflow: the SDK evaluates the bundle's modules afresh for each one.
let impl: Impl | undefined;
let on = false;
let startHeaders: Headers | undefined;

function otel(): Impl {
  if (!impl) {
    // webpack bundles these require()s and evaluates the modules at their first call. The outbound
    // interceptor registers the workflow's tracer provider, context manager and propagator.
    const m = require('@temporalio/interceptors-opentelemetry/lib/workflow') as typeof OtelWorkflow;
    impl = {
      outbound: new m.OpenTelemetryOutboundInterceptor(),
      internals: new m.OpenTelemetryInternalsInterceptor(),
      instrumentation:
        require('@temporalio/interceptors-opentelemetry/lib/instrumentation') as typeof OtelInstrumentation,
    };
  }
  return impl;
}

/**
 * Turn tracing on for this workflow. Call it only on a fact of the history (a local activity's result,
 * the input), so a replay decides the same.
 *
 * ```ts
 * if (listed.telemetry?.traces) enableTracing();
 * ```
 */
export function enableTracing(): void {
  on = true;
  otel();
}

/** Whether this workflow traces. */
export function tracingEnabled(): boolean {
  return on;
}

/** The trace context whoever started this run sent (a traced client, the run that continued as new). */
export function startContext(): Context | undefined {
  return on && startHeaders ? otel().instrumentation.extractContextFromHeaders(startHeaders) : undefined;
}

const withContext = (headers: Headers): Headers => otel().instrumentation.headersWithContext(headers);

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      execute(input, next) {
        startHeaders = input.headers;
        return next(input);
      },
    },
  ],
  outbound: [
    {
      scheduleActivity: (input, next) => next(on ? { ...input, headers: withContext(input.headers) } : input),
      continueAsNew: (input, next) => next(on ? { ...input, headers: withContext(input.headers) } : input),
      getLogAttributes: (input, next) => (on ? otel().outbound.getLogAttributes(input, next) : next(input)),
    },
  ],
  internals: [{ dispose: (input, next) => (impl ? impl.internals.dispose(input, next) : next(input)) }],
});
