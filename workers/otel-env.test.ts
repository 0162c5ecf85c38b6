import { ConfigError } from '../core/errors';
import { WorkerEnvSchema } from './env';
import { metricsConfigFromEnv, OTEL_ENV_NAMES, telemetryConfigFromEnv, tracingConfigFromEnv } from './otel-env';

const problem = (
  env: Record<string, string>,
  read: (env: Record<string, string>) => unknown = tracingConfigFromEnv,
) => {
  try {
    read(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('no ConfigError');
};

describe('the trace settings (OTEL_*)', () => {
  it('are off unless an endpoint or an exporter is named, and off when disabled', () => {
    expect(tracingConfigFromEnv({})).toBeUndefined();
    expect(tracingConfigFromEnv({ OTEL_SERVICE_NAME: 'w' })).toBeUndefined();
    expect(
      tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }),
    ).toBeUndefined();
    expect(
      tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }),
    ).toBeUndefined();
  });

  it('carry no content unless the operator opts in, and say what the opt-in takes', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(tracingConfigFromEnv(on)?.captureContent).toBeUndefined();
    expect(
      tracingConfigFromEnv({ ...on, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' })?.captureContent,
    ).toBe(true);
    expect(problem({ ...on, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'yes' })).toContain(
      'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="yes": must be true or false',
    );
  });

  it('send traces to …/v1/traces of the endpoint, or to the traces endpoint as it is', () => {
    expect(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://api.honeycomb.io/' })).toMatchObject({
      exporter: 'otlp',
      url: 'https://api.honeycomb.io/v1/traces',
      ratio: 1,
      serviceName: 'openstarry-worker',
    });
    expect(
      tracingConfigFromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/traces',
      })?.url,
    ).toBe('http://b:4318/traces');
    expect(tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: 'console' })?.exporter).toBe('console');
  });

  it('read headers, sampler, batch bounds and resource attributes', () => {
    expect(
      tracingConfigFromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=abc%3D,x-b=1',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_BSP_MAX_QUEUE_SIZE: '500',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod',
        OTEL_SERVICE_NAME: 'workers',
      }),
    ).toMatchObject({
      headers: { 'x-honeycomb-team': 'abc=', 'x-b': '1' },
      ratio: 0.25,
      batch: { maxQueueSize: 500 },
      resourceAttributes: { 'deployment.environment': 'prod' },
      serviceName: 'workers',
    });
  });

  it('name each malformed variable, with what it should hold', () => {
    const message = problem({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318',
      OTEL_TRACES_SAMPLER: 'ratio',
      OTEL_TRACES_SAMPLER_ARG: '1.5',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_MAX_QUEUE_SIZE: 'lots',
      OTEL_TRACES_EXPORTER: 'jaeger',
    });
    expect(message).toContain('OTEL_EXPORTER_OTLP_ENDPOINT="localhost:4318": scheme localhost: is not http or https');
    expect(message).toContain('OTEL_TRACES_SAMPLER="ratio": must be one of always_on');
    expect(message).toContain('OTEL_TRACES_SAMPLER_ARG="1.5": must be a number from 0 to 1');
    expect(message).toContain(
      'OTEL_EXPORTER_OTLP_PROTOCOL="http/json": a worker exports with http/protobuf (port 4318) or grpc (port 4317)',
    );
    expect(message).toContain('OTEL_BSP_MAX_QUEUE_SIZE="lots": must be a whole number');
    expect(message).toContain('OTEL_TRACES_EXPORTER="jaeger": must be otlp, console or none');
  });

  it('never repeat a header value, even a malformed one', () => {
    const message = problem({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s3cr3t-1,s3cr3t-2',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-k=%E0%A4%A',
    });
    expect(message).toContain('OTEL_EXPORTER_OTLP_HEADERS: pair 2 is not key=value');
    expect(message).toContain('OTEL_EXPORTER_OTLP_TRACES_HEADERS: the value of pair 1 (x-k) is not valid URL encoding');
    expect(message).not.toMatch(/s3cr3t|%E0/);
  });
});

describe('OTLP over gRPC', () => {
  it('uses the endpoint as it is for both signals (no /v1/… path), port 4317 by default', () => {
    expect(
      telemetryConfigFromEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317' }),
    ).toMatchObject({
      tracing: { protocol: 'grpc', url: 'http://c:4317' },
      metrics: { protocol: 'grpc', url: 'http://c:4317' },
    });
    expect(
      tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }),
    ).toMatchObject({
      protocol: 'grpc',
      url: 'http://localhost:4317',
    });
  });

  it('lets each signal choose its own protocol', () => {
    const both = telemetryConfigFromEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4317',
    });
    expect([both.tracing?.protocol, both.tracing?.url]).toEqual(['http/protobuf', 'http://c:4318/v1/traces']);
    expect([both.metrics?.protocol, both.metrics?.url]).toEqual(['grpc', 'http://c:4317']);
  });
});

describe('the metric settings (OTEL_*)', () => {
  it('are on with an exporter named, or with an OTLP endpoint when none is; off with none or when disabled', () => {
    expect(metricsConfigFromEnv({})).toBeUndefined();
    expect(metricsConfigFromEnv({ OTEL_TRACES_EXPORTER: 'console' })).toBeUndefined();
    expect(metricsConfigFromEnv({ OTEL_METRICS_EXPORTER: 'console' })?.exporter).toBe('console');
    expect(metricsConfigFromEnv({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4318/m' })).toMatchObject({
      exporter: 'otlp',
      url: 'http://c:4318/m',
    });
    for (const off of [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_METRICS_EXPORTER: 'none' },
      { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_SDK_DISABLED: 'true' },
    ])
      expect(metricsConfigFromEnv(off)).toBeUndefined();
  });

  it('push to …/v1/metrics every 60 s by default, or as often as OTEL_METRIC_EXPORT_INTERVAL says', () => {
    expect(metricsConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toMatchObject({
      protocol: 'http/protobuf',
      url: 'http://c:4318/v1/metrics',
      intervalMillis: 60_000,
      exportTimeoutMillis: 30_000,
      serviceName: 'openstarry-worker',
    });
    expect(
      metricsConfigFromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_METRIC_EXPORT_INTERVAL: '5000',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-a=1',
        OTEL_EXPORTER_OTLP_METRICS_HEADERS: 'x-b=2',
        OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'delta',
        OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'base2_exponential_bucket_histogram',
      }),
    ).toMatchObject({
      intervalMillis: 5000,
      exportTimeoutMillis: 5000,
      headers: { 'x-a': '1', 'x-b': '2' },
      temporality: 'delta',
      histogram: 'exponential',
    });
  });

  it('serve Prometheus on localhost:9464 unless told otherwise', () => {
    expect(metricsConfigFromEnv({ OTEL_METRICS_EXPORTER: 'prometheus' })?.prometheus).toEqual({
      host: 'localhost',
      port: 9464,
    });
    expect(
      metricsConfigFromEnv({
        OTEL_METRICS_EXPORTER: 'prometheus',
        OTEL_EXPORTER_PROMETHEUS_HOST: '0.0.0.0',
        OTEL_EXPORTER_PROMETHEUS_PORT: '9100',
      })?.prometheus,
    ).toEqual({ host: '0.0.0.0', port: 9100 });
  });

  it('name each malformed variable in one error, never repeating a header value', () => {
    const message = problem(
      {
        OTEL_METRICS_EXPORTER: 'statsd',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'collector:4318',
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
        OTEL_METRIC_EXPORT_INTERVAL: '1m',
        OTEL_EXPORTER_PROMETHEUS_PORT: '70000',
        OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'sometimes',
        OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'exponential',
        OTEL_EXPORTER_OTLP_METRICS_HEADERS: 's3cr3t-token',
        OTEL_TRACES_SAMPLER: 'ratio',
      },
      telemetryConfigFromEnv,
    );
    expect(message).toContain('OTEL_METRICS_EXPORTER="statsd": must be otlp, prometheus, console or none');
    expect(message).toContain(
      'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="collector:4318": scheme collector: is not http or https',
    );
    expect(message).toContain('OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="http/json": a worker exports with http/protobuf');
    expect(message).toContain('OTEL_METRIC_EXPORT_INTERVAL="1m": must be a whole number of at least 1');
    expect(message).toContain('OTEL_EXPORTER_PROMETHEUS_PORT="70000": must be a whole number from 1 to 65535');
    expect(message).toContain(
      'OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE="sometimes": must be cumulative or delta',
    );
    expect(message).toContain(
      'OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION="exponential": must be explicit_bucket_histogram or base2_exponential_bucket_histogram',
    );
    // A pair without "=" may be a bare secret: not repeated either.
    expect(message).toContain('OTEL_EXPORTER_OTLP_METRICS_HEADERS: pair 1 is not key=value');
    expect(message).not.toContain('s3cr3t');
    // The traces' problems come in the same error.
    expect(message).toContain('OTEL_TRACES_SAMPLER="ratio"');
  });

  it("says a shared variable's problem once, though both signals read it", () => {
    const message = problem({ OTEL_EXPORTER_OTLP_ENDPOINT: 'c:4318' }, telemetryConfigFromEnv);
    expect(message.match(/OTEL_EXPORTER_OTLP_ENDPOINT/g)).toHaveLength(1);
  });
});

describe('the worker environment', () => {
  it('lists every OpenTelemetry variable a worker reads, so the stack can set them', () => {
    expect(OTEL_ENV_NAMES.filter((name) => !(name in WorkerEnvSchema.shape))).toEqual([]);
  });
});
