/**
 * A worker's traces (workers/otel-env.ts says when): Temporal's OpenTelemetry activity interceptor (a
 * `RunActivity:<type>` span per attempt, child of the workflow span that scheduled it), the workflow spans
 * the task workflow makes (workflows/telemetry.ts) arriving through the `exporter` sink, one batch
 * processor and an OTLP (http/protobuf or grpc) or console exporter. Export is asynchronous and bounded: a slow or
 * unreachable collector never holds up a task; its failures are logged once, then at most every 10 minutes.
 *
 * ```ts
 * const tracing = startTracing(config.tracing);
 * await Worker.create({ ..., sinks: tracing.sinks, interceptors: { activity: [tracing.activityInterceptor] } });
 * // after worker.run() resolves:
 * await tracing.shutdown();
 * ```
 */
import { context, createTraceState, propagation, ROOT_CONTEXT, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { OpenTelemetrySinks, SerializableSpan } from '@temporalio/interceptors-opentelemetry';
import { TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import { OpenTelemetryActivityInboundInterceptor } from '@temporalio/interceptors-opentelemetry/lib/worker';
import { Runtime, type ActivityInterceptorsFactory, type InjectedSinks } from '@temporalio/worker';
import { Metadata } from '@grpc/grpc-js';
import { shownUrl, type TracingConfig } from './otel-env';

export { tracingConfigFromEnv, OTEL_ENV_NAMES, type TracingConfig } from './otel-env';

/** What a tracing worker adds to its options, and how it flushes at the end. */
export interface WorkerTracing {
  sinks: InjectedSinks<OpenTelemetrySinks>;
  activityInterceptor: ActivityInterceptorsFactory;
  /** Export what is queued and stop (after `worker.run()` resolved). */
  shutdown(): Promise<void>;
}

let registered = false;

/** How often an export failure is logged again while the collector stays unreachable. */
const FAILURE_LOG_EVERY_MS = 10 * 60_000;

/**
 * Start tracing for one worker. `log` takes the export failures (default: the worker's logger, WARN).
 */
export function startTracing(config: TracingConfig, log: (message: string) => void = warn): WorkerTracing {
  // The activity interceptor reads the workflow's context from the `_tracer-data` header (W3C traceparent)
  // and makes it the active one around its span: both need the process-wide propagator and context manager
  // (registered once per process; a registration made before ours stays).
  if (!registered) {
    registered = true;
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  }
  const resource = Resource.default().merge(
    new Resource({ ...config.resourceAttributes, 'service.name': config.serviceName }),
  );
  const common = {
    url: config.url,
    ...(config.timeoutMillis !== undefined ? { timeoutMillis: config.timeoutMillis } : {}),
    ...(config.compression
      ? { compression: config.compression === 'gzip' ? CompressionAlgorithm.GZIP : CompressionAlgorithm.NONE }
      : {}),
  };
  const exporter: SpanExporter =
    config.exporter === 'console'
      ? new ConsoleSpanExporter()
      : config.protocol === 'grpc'
        ? new GrpcTraceExporter({ ...common, metadata: grpcMetadata(config.headers) })
        : new OTLPTraceExporter({ ...common, headers: config.headers });
  const batch = new BatchSpanProcessor(
    reportingFailures('traces', exporter, shownUrl(config.url), log, (spans) => `${spans} spans dropped`),
    config.batch,
  );
  const processor = config.ratio < 1 ? sampledByTrace(batch, config.ratio) : batch;
  const provider = new BasicTracerProvider({ resource });
  provider.addSpanProcessor(processor);
  const tracer = provider.getTracer('openstarry-worker');
  return {
    sinks: workflowSpanSinks(processor, resource),
    // Only calls from a traced workflow carry the header: the others would make orphan root spans.
    activityInterceptor: (ctx) => {
      const traced = new OpenTelemetryActivityInboundInterceptor(ctx, { tracer });
      return {
        inbound: {
          execute: (input, next) => (input.headers[TRACE_HEADER] ? traced.execute(input, next) : next(input)),
        },
      };
    },
    shutdown: () => provider.shutdown(),
  };
}

/**
 * The `exporter` sink every worker and replayer of the bundle registers: a workflow that traced once calls
 * it on any worker it moves to (a worker that calls an unregistered sink logs a warning). Here it drops
 * the spans, as a replay must.
 */
export function silentSpanSinks(): InjectedSinks<OpenTelemetrySinks> {
  return { exporter: { export: { fn: () => undefined } } };
}

/**
 * Workflow spans to the worker's processor, tagged with three workflow facts (the package's
 * `makeWorkflowExporter` would copy the whole WorkflowInfo, memo and search attributes included, onto
 * each). Not called during replay (`callDuringReplay` is false by default): a span is exported once.
 */
function workflowSpanSinks(processor: SpanProcessor, resource: Resource): InjectedSinks<OpenTelemetrySinks> {
  return {
    exporter: {
      export: {
        fn: (info, spans: SerializableSpan[]) => {
          for (const s of spans) {
            const {
              spanContext: { traceState, ...ctx },
              ...rest
            } = s;
            const spanContext = { ...ctx, ...(traceState ? { traceState: createTraceState(traceState) } : {}) };
            const attributes: Attributes = {
              ...s.attributes,
              'temporal.workflow.id': info.workflowId,
              'temporal.run.id': info.runId,
              'temporal.workflow.type': info.workflowType,
            };
            processor.onEnd({ ...rest, attributes, spanContext: () => spanContext, resource } as ReadableSpan);
          }
        },
      },
    },
  };
}

/**
 * An exporter (of spans or metrics) that logs its failures once, then at most every
 * `FAILURE_LOG_EVERY_MS` with a count; every other method is the exporter's own.
 */
export function reportingFailures<E extends { export(items: never, done: (result: ExportResult) => void): void }>(
  signal: 'traces' | 'metrics',
  exporter: E,
  url: string,
  log: (message: string) => void = warn,
  lost?: (items: number) => string,
): E {
  let failed = 0;
  let items = 0;
  let loggedAt = -Infinity;
  const exportTo = (batch: unknown, done: (result: ExportResult) => void) =>
    exporter.export(batch as never, (result: ExportResult) => {
      if (result.code !== ExportResultCode.SUCCESS) {
        failed++;
        items += Array.isArray(batch) ? batch.length : 1;
        const now = Date.now();
        if (now - loggedAt >= FAILURE_LOG_EVERY_MS) {
          loggedAt = now;
          log(
            `${signal}: could not export to ${url} (${result.error?.message ?? 'export failed'}); ${lost ? `${lost(items)} in ` : ''}${failed} failed exports so far. Tasks are not affected; the next report of this comes in 10 minutes at the earliest.`,
          );
        }
      }
      done(result);
    });
  return new Proxy(exporter, {
    get(target, prop) {
      if (prop === 'export') return exportTo;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Headers as gRPC metadata (the OTLP/gRPC exporters take no plain headers). */
export function grpcMetadata(headers: Record<string, string>): Metadata {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(headers)) metadata.set(key, value);
  return metadata;
}

/** Keep a share of traces, decided by trace id: a task's workflow and activity spans agree. */
function sampledByTrace(processor: SpanProcessor, ratio: number): SpanProcessor {
  const sampler = new TraceIdRatioBasedSampler(ratio);
  const kept = (span: ReadableSpan) =>
    sampler.shouldSample(ROOT_CONTEXT, span.spanContext().traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
  return {
    onStart: (span, parent) => processor.onStart(span, parent),
    onEnd: (span) => (kept(span) ? processor.onEnd(span) : undefined),
    forceFlush: () => processor.forceFlush(),
    shutdown: () => processor.shutdown(),
  };
}

function warn(message: string): void {
  Runtime.instance().logger.warn(message, { sdkComponent: 'otel' });
}
