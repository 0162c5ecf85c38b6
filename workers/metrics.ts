/**
 * A worker process's metrics (workers/otel-env.ts says when): the task workflows' counters and Temporal's
 * own worker metrics (`temporal_*`), which Temporal's runtime collects into a `MetricsBuffer`, drained
 * every second into one OpenTelemetry `MeterProvider`; and the activities' histograms, recorded on that
 * provider directly. It exports with what the operator chose: OTLP (http/protobuf or grpc), pushed every
 * `OTEL_METRIC_EXPORT_INTERVAL`; a Prometheus `/metrics` endpoint (names sanitized: `starry_pain_total`);
 * or the console. Temporal's own Prometheus exporter would drop every dotted name, hence the buffer.
 *
 * One per process, started before the runtime is installed (the buffer joins its one `Runtime.install`):
 *
 * ```ts
 * const metrics = config.metrics ? await startMetrics(config.metrics) : undefined; // binds Prometheus' port
 * installWorkerLogger('INFO', { metrics });
 * const worker = await createWorker({ connection, config, metrics });
 * // after worker.run() resolved and the connection closed:
 * await metrics?.shutdown();
 * ```
 */
import {
  ValueType,
  type Attributes,
  type Counter,
  type Histogram,
  type Meter,
  type UpDownCounter,
} from '@opentelemetry/api';
import type { Gauge } from '@opentelemetry/api';
import { OTLPMetricExporter as GrpcMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { Resource } from '@opentelemetry/resources';
import {
  Aggregation,
  AggregationTemporality,
  ConsoleMetricExporter,
  ExponentialHistogramAggregation,
  InstrumentType,
  MeterProvider,
  PeriodicExportingMetricReader,
  type MetricReader,
  type PushMetricExporter,
} from '@opentelemetry/sdk-metrics';
import { MetricsBuffer, type BufferedMetricUpdate } from '@temporalio/worker';
import type { ActivityMeter } from '../activities/metrics';
import { ConfigError } from '../core/errors';
import { METRIC, type MetricSpec } from '../core/telemetry';
import { shownUrl, type MetricsConfig } from './otel-env';
import { grpcMetadata, reportingFailures } from './otel';

export { metricsConfigFromEnv, type MetricsConfig } from './otel-env';

/** A process's metrics pipeline. */
export interface WorkerMetrics {
  /** For the runtime's one install (workers/log.ts): Temporal's side of the metrics lands here. */
  buffer: MetricsBuffer;
  /** Where the activities record their histograms. */
  activityMeter: ActivityMeter;
  /** Where the metrics go, for the worker's start line: e.g. `Prometheus at http://localhost:9464/metrics`. */
  where: string;
  /** Drain the buffer once more, export what is left and stop (the Prometheus endpoint closes). */
  shutdown(): Promise<void>;
}

/** How often the runtime's buffer is drained into the provider. */
const DRAIN_EVERY_MS = 1000;
/** Updates the buffer holds between drains (beyond: dropped, and the runtime logs it). */
const BUFFER_SIZE = 100_000;

/**
 * Start the pipeline: the provider and its exporter (Prometheus' endpoint is listening when this
 * resolves), and the drain of the runtime's buffer. `log` takes export failures (default: the worker's
 * logger, WARN): once, then at most every 10 minutes.
 *
 * @throws ConfigError when Prometheus' port cannot be bound (in use, or a host this machine does not have).
 */
export async function startMetrics(config: MetricsConfig, log?: (message: string) => void): Promise<WorkerMetrics> {
  const resource = Resource.default().merge(
    new Resource({ ...config.resourceAttributes, 'service.name': config.serviceName }),
  );
  const { reader, where } = await readerFor(config, log);
  const provider = new MeterProvider({ resource, readers: [reader] });
  const meter = provider.getMeter('openstarry');
  // Temporal's durations in milliseconds, as its own exporters send them (the provider's default buckets
  // suit them); ours are seconds, as the GenAI conventions say.
  const buffer = new MetricsBuffer({ maxBufferSize: BUFFER_SIZE });
  const instruments = new Instruments(meter);
  const drain = () => {
    for (const update of buffer.retrieveUpdates()) instruments.apply(update);
  };
  const timer = setInterval(drain, DRAIN_EVERY_MS).unref();
  let stopped: Promise<void> | undefined;
  return {
    buffer,
    activityMeter: { record: (metric, value, attributes) => instruments.histogram(metric).record(value, attributes) },
    where,
    shutdown: () =>
      (stopped ??= (async () => {
        clearInterval(timer);
        drain();
        await provider.shutdown();
      })()),
  };
}

/** The provider's reader for the operator's exporter, and a phrase saying where it sends. */
async function readerFor(
  config: MetricsConfig,
  log?: (message: string) => void,
): Promise<{ reader: MetricReader; where: string }> {
  if (config.exporter === 'prometheus') {
    const { host, port } = config.prometheus;
    const exporter = new PrometheusExporter({ host, port, preventServerStart: true });
    try {
      await exporter.startServer();
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code === 'EADDRINUSE' ? 'is in use' : 'cannot be listened on';
      throw new ConfigError(
        `metrics: ${host}:${port} ${why} (${(err as Error).message}). Set OTEL_EXPORTER_PROMETHEUS_PORT to a free port (or OTEL_EXPORTER_PROMETHEUS_HOST), or stop what holds it.`,
      );
    }
    return { reader: exporter, where: `Prometheus at http://${host}:${port}/metrics` };
  }
  const periodic = (exporter: PushMetricExporter) =>
    new PeriodicExportingMetricReader({
      exporter,
      exportIntervalMillis: config.intervalMillis,
      exportTimeoutMillis: config.exportTimeoutMillis,
    });
  const every = `every ${config.intervalMillis / 1000} s`;
  if (config.exporter === 'console')
    return { reader: periodic(new ConsoleMetricExporter()), where: `the console ${every}` };
  const common = {
    url: config.url,
    ...(config.timeoutMillis !== undefined ? { timeoutMillis: config.timeoutMillis } : {}),
    ...(config.compression
      ? { compression: config.compression === 'gzip' ? CompressionAlgorithm.GZIP : CompressionAlgorithm.NONE }
      : {}),
    // Exponential histograms for every histogram instrument (an exporter's preference outranks the advice).
    ...(config.histogram === 'exponential'
      ? {
          aggregationPreference: (type: InstrumentType) =>
            type === InstrumentType.HISTOGRAM ? new ExponentialHistogramAggregation() : Aggregation.Default(),
        }
      : {}),
    ...(config.temporality
      ? {
          temporalityPreference:
            config.temporality === 'delta' ? AggregationTemporality.DELTA : AggregationTemporality.CUMULATIVE,
        }
      : {}),
  };
  const grpc = config.protocol === 'grpc';
  const exporter: PushMetricExporter = grpc
    ? new GrpcMetricExporter({ ...common, metadata: grpcMetadata(config.headers) })
    : new ProtoMetricExporter({ ...common, headers: config.headers });
  const url = shownUrl(config.url);
  return {
    reader: periodic(reportingFailures('metrics', exporter, url, log)),
    where: `OTLP/${grpc ? 'gRPC' : 'HTTP'} to ${url} ${every}`,
  };
}

type Instrument = { add: Counter | UpDownCounter } | { record: Histogram | Gauge };

/**
 * The provider's instruments for the runtime's metrics, made at their first update: a counter's update
 * is a delta, a histogram's or gauge's the value. Ours get the conventions' buckets (`METRIC`).
 */
class Instruments {
  private readonly byName = new Map<string, Instrument>();
  private readonly histograms = new Map<string, Histogram>();
  private readonly advised = new Map<string, MetricSpec>(Object.values(METRIC).map((m) => [m.name, m]));

  constructor(private readonly meter: Meter) {}

  apply({ metric, value, attributes }: BufferedMetricUpdate): void {
    let i = this.byName.get(metric.name);
    if (!i) this.byName.set(metric.name, (i = this.create(metric)));
    const attrs = attributes as Attributes;
    if ('add' in i) i.add.add(value, attrs);
    else i.record.record(value, attrs);
  }

  histogram(spec: MetricSpec): Histogram {
    let h = this.histograms.get(spec.name);
    // Durations are seconds with a fraction; token counts whole.
    const float = spec.unit === 's';
    if (!h) this.histograms.set(spec.name, (h = this.newHistogram(spec.name, spec.unit, spec.description, float)));
    return h;
  }

  private create(metric: BufferedMetricUpdate['metric']): Instrument {
    const options = { unit: metric.unit ?? '', description: metric.description ?? '' };
    switch (metric.kind) {
      case 'counter':
        return { add: this.meter.createCounter(metric.name, options) };
      case 'up-down-counter':
        return { add: this.meter.createUpDownCounter(metric.name, options) };
      case 'histogram':
        return {
          record: this.newHistogram(metric.name, options.unit, options.description, metric.valueType === 'float'),
        };
      default:
        return {
          record: this.meter.createGauge(metric.name, {
            ...options,
            valueType: metric.valueType === 'float' ? ValueType.DOUBLE : ValueType.INT,
          }),
        };
    }
  }

  private newHistogram(name: string, unit: string, description: string, float: boolean): Histogram {
    const buckets = this.advised.get(name)?.buckets;
    return this.meter.createHistogram(name, {
      unit,
      description,
      valueType: float ? ValueType.DOUBLE : ValueType.INT,
      ...(buckets ? { advice: { explicitBucketBoundaries: [...buckets] } } : {}),
    });
  }
}
