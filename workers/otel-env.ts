/**
 * The worker's trace and metric settings, from the standard OpenTelemetry variables, checked once at
 * start. Tracing is on only when `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 * `OTEL_TRACES_EXPORTER` (otlp or console) is set; metrics when `OTEL_METRICS_EXPORTER` names otlp,
 * prometheus or console, or (it unset) an OTLP endpoint is set; both off with `OTEL_SDK_DISABLED=true`.
 * OTLP speaks http/protobuf (port 4318, `…/v1/traces`, `…/v1/metrics`) or grpc (port 4317, the endpoint
 * as is). A malformed value is a start-up error naming the variable; a header's value (an API key,
 * often) is never repeated.
 *
 * ```ts
 * telemetryConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })
 * // { tracing: { exporter: 'otlp', url: 'http://127.0.0.1:4318/v1/traces', ... }, metrics: { exporter: 'otlp', url: 'http://127.0.0.1:4318/v1/metrics', ... } }
 * ```
 */
import { ConfigError } from '../core/errors';

/** How OTLP travels: protobuf over HTTP (port 4318) or gRPC (port 4317). */
export type OtlpProtocol = 'http/protobuf' | 'grpc';

/** What a worker traces with (workers/otel.ts). */
export interface TracingConfig {
  exporter: 'otlp' | 'console';
  /** Default http/protobuf. */
  protocol?: OtlpProtocol;
  /** Where spans go: the OTLP/HTTP URL, or the gRPC endpoint. */
  url: string;
  headers: Record<string, string>;
  timeoutMillis?: number;
  compression?: 'gzip' | 'none';
  /** The share of tasks traced (a sampler by trace id, so a task's spans are kept or dropped together). */
  ratio: number;
  /**
   * The operator opted in to prompts, answers and tool arguments and results on the attempts' spans
   * (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`); by default spans carry none.
   */
  captureContent?: true;
  /** The batch processor's bounds (`OTEL_BSP_*`); absent: OpenTelemetry's defaults (queue 2048). */
  batch: {
    maxQueueSize?: number;
    maxExportBatchSize?: number;
    scheduledDelayMillis?: number;
    exportTimeoutMillis?: number;
  };
  serviceName: string;
  resourceAttributes: Record<string, string>;
}

/** What a worker's metrics go to (workers/metrics.ts). */
export interface MetricsConfig {
  exporter: 'otlp' | 'prometheus' | 'console';
  /** OTLP: how, and where (the OTLP/HTTP URL, or the gRPC endpoint). */
  protocol: OtlpProtocol;
  url: string;
  headers: Record<string, string>;
  timeoutMillis?: number;
  compression?: 'gzip' | 'none';
  /** OTLP's aggregation temporality; default cumulative. */
  temporality?: 'cumulative' | 'delta';
  /**
   * OTLP's histograms: explicit buckets (default; the conventions' boundaries) or base-2 exponential ones,
   * from which CloudWatch computes percentiles.
   */
  histogram?: 'explicit' | 'exponential';
  /** How often metrics are pushed (OTLP, console); default 60000 ms, as the spec says. */
  intervalMillis: number;
  /** How long one push may take; at most the interval (default 30000 ms). */
  exportTimeoutMillis: number;
  /** Prometheus: where `/metrics` is served; default localhost:9464. */
  prometheus: { host: string; port: number };
  serviceName: string;
  resourceAttributes: Record<string, string>;
}

/** Every OpenTelemetry variable a worker reads. */
export const OTEL_ENV_NAMES = [
  'OTEL_SDK_DISABLED',
  'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_EXPORTER_OTLP_TIMEOUT',
  'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
  'OTEL_EXPORTER_OTLP_COMPRESSION',
  'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_BSP_SCHEDULE_DELAY',
  'OTEL_BSP_EXPORT_TIMEOUT',
  'OTEL_BSP_MAX_QUEUE_SIZE',
  'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_METRICS_EXPORTER',
  'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT',
  'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL',
  'OTEL_EXPORTER_OTLP_METRICS_HEADERS',
  'OTEL_EXPORTER_OTLP_METRICS_TIMEOUT',
  'OTEL_EXPORTER_OTLP_METRICS_COMPRESSION',
  'OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE',
  'OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION',
  'OTEL_METRIC_EXPORT_INTERVAL',
  'OTEL_METRIC_EXPORT_TIMEOUT',
  'OTEL_EXPORTER_PROMETHEUS_HOST',
  'OTEL_EXPORTER_PROMETHEUS_PORT',
] as const;
export type OtelEnvName = (typeof OTEL_ENV_NAMES)[number];

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];
const PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'];
/** The OTLP collector's default address, per protocol, when no endpoint is set. */
const DEFAULT_ENDPOINT: Record<OtlpProtocol, string> = {
  'http/protobuf': 'http://localhost:4318',
  grpc: 'http://localhost:4317',
};
/** The spec's defaults: a push every minute, each taking at most 30 s; Prometheus on 9464. */
const DEFAULT_METRIC_INTERVAL_MS = 60_000;
const DEFAULT_METRIC_TIMEOUT_MS = 30_000;
const DEFAULT_PROMETHEUS = { host: 'localhost', port: 9464 };

type Raw = Partial<Record<string, string | undefined>>;

/**
 * Read the trace and metric settings (either `undefined` when off).
 *
 * @throws ConfigError naming every malformed variable of both and what it should hold.
 */
export function telemetryConfigFromEnv(raw: Raw): { tracing?: TracingConfig; metrics?: MetricsConfig } {
  const r = new Reader(raw);
  const tracing = readTracing(r);
  const metrics = readMetrics(r);
  r.check();
  return { ...(tracing ? { tracing } : {}), ...(metrics ? { metrics } : {}) };
}

/**
 * Read the trace settings; `undefined` when tracing is off.
 *
 * @throws ConfigError naming every malformed variable and what it should hold.
 */
export function tracingConfigFromEnv(raw: Raw): TracingConfig | undefined {
  const r = new Reader(raw);
  const tracing = readTracing(r);
  r.check();
  return tracing;
}

/**
 * Read the metric settings; `undefined` when metrics are off.
 *
 * ```ts
 * metricsConfigFromEnv({ OTEL_METRICS_EXPORTER: 'prometheus' })?.prometheus // { host: 'localhost', port: 9464 }
 * ```
 * @throws ConfigError naming every malformed variable and what it should hold.
 */
export function metricsConfigFromEnv(raw: Raw): MetricsConfig | undefined {
  const r = new Reader(raw);
  const metrics = readMetrics(r);
  r.check();
  return metrics;
}

/** The variables, read and checked; every problem collected for one error. */
class Reader {
  private readonly issues: string[] = [];
  /** `OTEL_SDK_DISABLED=true`: neither traces nor metrics. */
  readonly disabled: boolean;
  /** The service's name and resource attributes, which both signals carry. */
  readonly resource: { serviceName: string; resourceAttributes: Record<string, string> };

  constructor(private readonly raw: Raw) {
    const disabledValue = this.env('OTEL_SDK_DISABLED');
    if (disabledValue && !/^(true|false)$/i.test(disabledValue)) this.bad('OTEL_SDK_DISABLED', 'must be true or false');
    const resourceAttributes = keyValues(
      'OTEL_RESOURCE_ATTRIBUTES',
      this.env('OTEL_RESOURCE_ATTRIBUTES'),
      this.issues,
      false,
    );
    this.disabled = /^true$/i.test(disabledValue ?? '');
    this.resource = {
      serviceName: this.env('OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? 'openstarry-worker',
      resourceAttributes,
    };
  }

  env(name: OtelEnvName): string | undefined {
    const v = this.raw[name]?.trim();
    return v ? v : undefined;
  }

  bad(name: OtelEnvName, why: string, showValue = true): void {
    this.issues.push(`  - ${name}${showValue ? `="${this.env(name)}"` : ''}: ${why}`);
  }

  /** The first of `names` that is set (the signal's own variable before the shared one). */
  private first(...names: OtelEnvName[]): OtelEnvName {
    return names.find((n) => this.env(n)) ?? names[names.length - 1]!;
  }

  private url(name: OtelEnvName): string | undefined {
    const v = this.env(name);
    if (!v) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(v);
    } catch {
      this.bad(name, 'is not a URL. Write e.g. http://127.0.0.1:4318');
      return undefined;
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      this.bad(name, `scheme ${parsed.protocol} is not http or https. Write e.g. http://127.0.0.1:4318`);
      return undefined;
    }
    return v;
  }

  count(name: OtelEnvName, min = 0, max = Infinity): number | undefined {
    const v = this.env(name);
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
      this.bad(
        name,
        `must be a whole number${max < Infinity ? ` from ${min} to ${max}` : min ? ` of at least ${min}` : ''}`,
      );
      return undefined;
    }
    return Number(v);
  }

  /** An exporter list (`otlp`, `none`, …): the one exporter named, `none`, or undefined when unset. */
  exporter<E extends string>(name: OtelEnvName, known: readonly E[]): E | 'none' | undefined {
    const named = this.env(name)
      ?.split(',')
      .map((e) => e.trim())
      .filter(Boolean);
    if (!named) return undefined;
    const choices = `${known.join(', ')} or none`;
    if (named.some((e) => e !== 'none' && !known.includes(e as E))) this.bad(name, `must be ${choices}`);
    else if (named.filter((e) => e !== 'none').length > 1) this.bad(name, `name one exporter: ${known.join(' or ')}`);
    return (named.find((e) => e !== 'none') as E | undefined) ?? 'none';
  }

  /** The OTLP settings of one signal: its protocol, URL, headers, timeout and compression. */
  otlp(signal: 'TRACES' | 'METRICS', path: string) {
    const own = (suffix: string) => `OTEL_EXPORTER_OTLP_${signal}_${suffix}` as OtelEnvName;
    const shared = (suffix: string) => `OTEL_EXPORTER_OTLP_${suffix}` as OtelEnvName;
    const protocol = this.protocol(this.first(own('PROTOCOL'), shared('PROTOCOL')));
    const signalUrl = this.url(own('ENDPOINT'));
    const baseUrl = this.url(shared('ENDPOINT'));
    // gRPC names a host and port, so the endpoint is used as it is; OTLP/HTTP appends the signal's path.
    const base = (baseUrl ?? DEFAULT_ENDPOINT[protocol]).replace(/\/+$/, '');
    const compressionName = this.first(own('COMPRESSION'), shared('COMPRESSION'));
    const compression = this.env(compressionName);
    if (compression && compression !== 'gzip' && compression !== 'none')
      this.bad(compressionName, 'must be gzip or none');
    const timeoutMillis = this.count(own('TIMEOUT'), 1) ?? this.count(shared('TIMEOUT'), 1);
    return {
      endpointSet: signalUrl !== undefined || baseUrl !== undefined,
      protocol,
      url: signalUrl ?? (protocol === 'grpc' ? base : `${base}${path}`),
      headers: {
        ...keyValues(shared('HEADERS'), this.env(shared('HEADERS')), this.issues, true),
        ...keyValues(own('HEADERS'), this.env(own('HEADERS')), this.issues, true),
      },
      ...(timeoutMillis !== undefined ? { timeoutMillis } : {}),
      ...(compression === 'gzip' || compression === 'none' ? { compression: compression as 'gzip' | 'none' } : {}),
    };
  }

  /** The OTLP protocol the variable `name` sets (default http/protobuf); http/json is not one a worker speaks. */
  private protocol(name: OtelEnvName): OtlpProtocol {
    const p = this.env(name);
    if (p && !PROTOCOLS.includes(p)) this.bad(name, `must be one of ${PROTOCOLS.join(', ')}`);
    else if (p === 'http/json')
      this.bad(name, 'a worker exports with http/protobuf (port 4318) or grpc (port 4317): set one of those');
    else if (p) return p as OtlpProtocol;
    return 'http/protobuf';
  }

  /** @throws ConfigError naming every problem found. */
  check(): void {
    // The shared variables are read once per signal: each problem is said once.
    if (this.issues.length)
      throw new ConfigError(`Invalid OpenTelemetry environment:\n${[...new Set(this.issues)].join('\n')}`);
  }
}

function readTracing(r: Reader): TracingConfig | undefined {
  const exporter = r.exporter('OTEL_TRACES_EXPORTER', ['otlp', 'console'] as const);
  const { endpointSet, ...otlp } = r.otlp('TRACES', '/v1/traces');
  const sampler = r.env('OTEL_TRACES_SAMPLER');
  if (sampler && !SAMPLERS.includes(sampler)) r.bad('OTEL_TRACES_SAMPLER', `must be one of ${SAMPLERS.join(', ')}`);
  const arg = r.env('OTEL_TRACES_SAMPLER_ARG');
  const argValue = arg === undefined ? 1 : Number(arg);
  if (arg !== undefined && !(argValue >= 0 && argValue <= 1))
    r.bad('OTEL_TRACES_SAMPLER_ARG', 'must be a number from 0 to 1. E.g. 0.1 traces a tenth of the tasks');
  // A task's spans all start in its workflow, so "parent based" is the task's own decision.
  const ratio = sampler?.endsWith('always_off') ? 0 : sampler?.endsWith('traceidratio') ? argValue : 1;
  const batch = {
    scheduledDelayMillis: r.count('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: r.count('OTEL_BSP_EXPORT_TIMEOUT', 1),
    maxQueueSize: r.count('OTEL_BSP_MAX_QUEUE_SIZE', 1),
    maxExportBatchSize: r.count('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 1),
  };
  const content = r.env('OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT');
  if (content && !/^(true|false)$/i.test(content))
    r.bad('OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT', 'must be true or false');
  const off = r.disabled || exporter === 'none' || (!exporter && !endpointSet) || ratio === 0;
  if (off) return undefined;
  return {
    exporter: exporter ?? 'otlp',
    ...otlp,
    ratio,
    ...(content?.toLowerCase() === 'true' ? { captureContent: true as const } : {}),
    batch: Object.fromEntries(Object.entries(batch).filter(([, v]) => v !== undefined)),
    ...r.resource,
  };
}

/** The spec's names of OTLP's histogram aggregations. */
const HISTOGRAM_AGGREGATIONS: Partial<Record<string, 'explicit' | 'exponential'>> = {
  explicit_bucket_histogram: 'explicit',
  base2_exponential_bucket_histogram: 'exponential',
};

function readMetrics(r: Reader): MetricsConfig | undefined {
  const exporter = r.exporter('OTEL_METRICS_EXPORTER', ['otlp', 'prometheus', 'console'] as const);
  const { endpointSet, ...otlp } = r.otlp('METRICS', '/v1/metrics');
  const temporality = r.env('OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE')?.toLowerCase();
  if (temporality && !['cumulative', 'delta'].includes(temporality))
    r.bad('OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE', 'must be cumulative or delta');
  const histogram =
    HISTOGRAM_AGGREGATIONS[
      (r.env('OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION') ?? 'explicit_bucket_histogram').toLowerCase()
    ];
  if (!histogram)
    r.bad(
      'OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION',
      'must be explicit_bucket_histogram or base2_exponential_bucket_histogram',
    );
  const intervalMillis = r.count('OTEL_METRIC_EXPORT_INTERVAL', 1) ?? DEFAULT_METRIC_INTERVAL_MS;
  const timeout = r.count('OTEL_METRIC_EXPORT_TIMEOUT', 1) ?? DEFAULT_METRIC_TIMEOUT_MS;
  const port = r.count('OTEL_EXPORTER_PROMETHEUS_PORT', 1, 65535) ?? DEFAULT_PROMETHEUS.port;
  const host = r.env('OTEL_EXPORTER_PROMETHEUS_HOST') ?? DEFAULT_PROMETHEUS.host;
  if (/[\s/]/.test(host))
    r.bad('OTEL_EXPORTER_PROMETHEUS_HOST', 'must be a host name or address to listen on, e.g. localhost or 0.0.0.0');
  const off = r.disabled || exporter === 'none' || (!exporter && !endpointSet);
  if (off) return undefined;
  return {
    exporter: exporter ?? 'otlp',
    ...otlp,
    ...(temporality ? { temporality: temporality as MetricsConfig['temporality'] } : {}),
    ...(histogram === 'exponential' ? { histogram } : {}),
    intervalMillis,
    // The SDK refuses a push that may outlast the interval.
    exportTimeoutMillis: Math.min(timeout, intervalMillis),
    prometheus: { host, port },
    ...r.resource,
  };
}

/** A URL for a log line: without the user and password it may carry, and without its query. */
export function shownUrl(url: string): string {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  u.search = '';
  return u.toString();
}

/**
 * `k=v,k2=v2` (values URL-encoded), as the OpenTelemetry spec writes headers and resource attributes.
 * A malformed pair is named by its position and key, never by its value.
 */
function keyValues(
  name: OtelEnvName,
  value: string | undefined,
  issues: string[],
  secret: boolean,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (!value) return out;
  const pairs = value.split(',').map((p) => p.trim());
  pairs.forEach((pair, i) => {
    if (!pair) return;
    const eq = pair.indexOf('=');
    const key = eq > 0 ? pair.slice(0, eq).trim() : '';
    const where = `pair ${i + 1}${key ? ` (${key})` : ''}`;
    if (eq <= 0 || !key) {
      issues.push(
        `  - ${name}: ${where} is not key=value. Write comma-separated key=value pairs${secret ? ', e.g. x-api-key=…' : ', e.g. deployment.environment=prod'}`,
      );
      return;
    }
    try {
      out[key] = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      issues.push(`  - ${name}: the value of ${where} is not valid URL encoding (write %XX escapes)`);
    }
  });
  return out;
}
