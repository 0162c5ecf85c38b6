/**
 * The worker's trace settings, from the standard OpenTelemetry variables, checked once at start: tracing
 * is on only when `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 * `OTEL_TRACES_EXPORTER` (otlp or console) is set, and off with `OTEL_SDK_DISABLED=true`. A malformed value
 * is a start-up error naming the variable; a header's value (an API key, often) is never repeated.
 *
 * ```ts
 * tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })
 * // { exporter: 'otlp', url: 'http://127.0.0.1:4318/v1/traces', headers: {}, ratio: 1, ... }
 * ```
 */
import { ConfigError } from '../core/errors';

/** What a worker traces with (workers/otel.ts). */
export interface TracingConfig {
  exporter: 'otlp' | 'console';
  /** OTLP/HTTP (protobuf): where spans go. */
  url: string;
  headers: Record<string, string>;
  timeoutMillis?: number;
  compression?: 'gzip' | 'none';
  /** The share of tasks traced (a sampler by trace id, so a task's spans are kept or dropped together). */
  ratio: number;
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

/** Every OpenTelemetry variable a worker reads. */
export const OTEL_ENV_NAMES = [
  'OTEL_SDK_DISABLED',
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
/** The OTLP default when only `OTEL_TRACES_EXPORTER=otlp` is set. */
const DEFAULT_TRACES_URL = 'http://localhost:4318/v1/traces';

/**
 * Read the trace settings; `undefined` when tracing is off.
 *
 * @throws ConfigError naming every malformed variable and what it should hold.
 */
export function tracingConfigFromEnv(raw: Partial<Record<string, string | undefined>>): TracingConfig | undefined {
  const env = (name: OtelEnvName): string | undefined => {
    const v = raw[name]?.trim();
    return v ? v : undefined;
  };
  const issues: string[] = [];
  const bad = (name: OtelEnvName, why: string, showValue = true) =>
    issues.push(`  - ${name}${showValue ? `="${env(name)}"` : ''}: ${why}`);

  const disabled = env('OTEL_SDK_DISABLED');
  if (disabled && !/^(true|false)$/i.test(disabled)) bad('OTEL_SDK_DISABLED', 'must be true or false');

  const exporters = env('OTEL_TRACES_EXPORTER')
    ?.split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const unknown = exporters?.filter((e) => !['otlp', 'console', 'none'].includes(e)) ?? [];
  if (unknown.length) bad('OTEL_TRACES_EXPORTER', 'must be otlp, console or none');
  else if (exporters && exporters.filter((e) => e !== 'none').length > 1)
    bad('OTEL_TRACES_EXPORTER', 'name one exporter: otlp or console');

  const url = (name: OtelEnvName): string | undefined => {
    const v = env(name);
    if (!v) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(v);
    } catch {
      bad(name, 'is not a URL. Write e.g. http://127.0.0.1:4318');
      return undefined;
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      bad(name, `scheme ${parsed.protocol} is not http or https. Write e.g. http://127.0.0.1:4318`);
      return undefined;
    }
    return v;
  };
  const signalUrl = url('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const baseUrl = url('OTEL_EXPORTER_OTLP_ENDPOINT');

  const protocolName = env('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env(protocolName);
  if (protocol && !PROTOCOLS.includes(protocol)) bad(protocolName, `must be one of ${PROTOCOLS.join(', ')}`);
  else if (protocol && protocol !== 'http/protobuf')
    bad(protocolName, 'this worker exports traces with http/protobuf only (OTLP/HTTP, port 4318): set http/protobuf');

  const headers = {
    ...keyValues('OTEL_EXPORTER_OTLP_HEADERS', env('OTEL_EXPORTER_OTLP_HEADERS'), issues, true),
    ...keyValues('OTEL_EXPORTER_OTLP_TRACES_HEADERS', env('OTEL_EXPORTER_OTLP_TRACES_HEADERS'), issues, true),
  };

  const count = (name: OtelEnvName, min = 0): number | undefined => {
    const v = env(name);
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v) || Number(v) < min) {
      bad(name, `must be a whole number${min ? ` of at least ${min}` : ''}`);
      return undefined;
    }
    return Number(v);
  };
  const timeoutMillis = count('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', 1) ?? count('OTEL_EXPORTER_OTLP_TIMEOUT', 1);

  const compressionName = env('OTEL_EXPORTER_OTLP_TRACES_COMPRESSION')
    ? 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION'
    : 'OTEL_EXPORTER_OTLP_COMPRESSION';
  const compression = env(compressionName);
  if (compression && compression !== 'gzip' && compression !== 'none') bad(compressionName, 'must be gzip or none');

  const sampler = env('OTEL_TRACES_SAMPLER');
  if (sampler && !SAMPLERS.includes(sampler)) bad('OTEL_TRACES_SAMPLER', `must be one of ${SAMPLERS.join(', ')}`);
  const arg = env('OTEL_TRACES_SAMPLER_ARG');
  const argValue = arg === undefined ? 1 : Number(arg);
  if (arg !== undefined && !(argValue >= 0 && argValue <= 1))
    bad('OTEL_TRACES_SAMPLER_ARG', 'must be a number from 0 to 1. E.g. 0.1 traces a tenth of the tasks');
  // A task's spans all start in its workflow, so "parent based" is the task's own decision.
  const ratio = sampler?.endsWith('always_off') ? 0 : sampler?.endsWith('traceidratio') ? argValue : 1;

  const batch = {
    scheduledDelayMillis: count('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: count('OTEL_BSP_EXPORT_TIMEOUT', 1),
    maxQueueSize: count('OTEL_BSP_MAX_QUEUE_SIZE', 1),
    maxExportBatchSize: count('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 1),
  };
  const resourceAttributes = keyValues('OTEL_RESOURCE_ATTRIBUTES', env('OTEL_RESOURCE_ATTRIBUTES'), issues, false);

  if (issues.length) throw new ConfigError(`Invalid OpenTelemetry environment:\n${issues.join('\n')}`);
  const exporter = exporters?.find((e) => e !== 'none') as 'otlp' | 'console' | undefined;
  const off =
    /^true$/i.test(disabled ?? '') || (exporters !== undefined && !exporter) || (!exporter && !signalUrl && !baseUrl);
  if (off || ratio === 0) return undefined;
  return {
    exporter: exporter ?? 'otlp',
    url: signalUrl ?? (baseUrl ? `${baseUrl.replace(/\/+$/, '')}/v1/traces` : DEFAULT_TRACES_URL),
    headers,
    ...(timeoutMillis !== undefined ? { timeoutMillis } : {}),
    ...(compression ? { compression: compression as 'gzip' | 'none' } : {}),
    ratio,
    batch: Object.fromEntries(Object.entries(batch).filter(([, v]) => v !== undefined)),
    serviceName: env('OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? 'openstarry-worker',
    resourceAttributes,
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
