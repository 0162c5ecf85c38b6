import { ConfigError } from '../core/errors';
import { tracingConfigFromEnv } from './otel-env';

const problem = (env: Record<string, string>) => {
  try {
    tracingConfigFromEnv(env);
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
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_BSP_MAX_QUEUE_SIZE: 'lots',
      OTEL_TRACES_EXPORTER: 'jaeger',
    });
    expect(message).toContain('OTEL_EXPORTER_OTLP_ENDPOINT="localhost:4318": scheme localhost: is not http or https');
    expect(message).toContain('OTEL_TRACES_SAMPLER="ratio": must be one of always_on');
    expect(message).toContain('OTEL_TRACES_SAMPLER_ARG="1.5": must be a number from 0 to 1');
    expect(message).toContain('OTEL_EXPORTER_OTLP_PROTOCOL="grpc": this worker exports traces with http/protobuf only');
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
