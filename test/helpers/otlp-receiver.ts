/**
 * Collectors for tests: the dev trace viewer (dev/trace-viewer.ts, an OTLP/HTTP server on loopback that
 * decodes the real protobuf wire format) on a free port, with every span it received kept in arrival
 * order, beyond the viewer's own bounds; an OTLP/HTTP collector of metrics; and an OTLP/gRPC one (the
 * collector's TraceService and MetricsService), decoding the same protobuf.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { eventually } from '../../dev/poll';
import { decodeTraceRequest, otlpAttributes, otlpNumber } from '../../dev/trace-store';
import { startTraceViewer, type ReceivedSpan, type TraceViewer } from '../../dev/trace-viewer';
import type { TracingConfig } from '../../workers/otel';
import type { ScenarioRun } from './scenarios';

export type { ReceivedSpan } from '../../dev/trace-viewer';

export interface OtlpReceiver {
  /** e.g. http://127.0.0.1:40123 (traces go to …/v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** The viewer behind it: its pages show what it received. */
  viewer: TraceViewer;
  close(): Promise<void>;
}

/**
 * Start a receiver.
 *
 * ```ts
 * const receiver = await startOtlpReceiver();
 * // ... a worker exporting to `${receiver.url}/v1/traces` ...
 * receiver.spans.find((s) => s.name === 'invoke_agent');
 * ```
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const viewer = await startTraceViewer({ port: 0, onSpans: (received) => spans.push(...received) });
  return { url: viewer.url, spans, viewer, close: () => viewer.close() };
}

/** Tracing to `url`, exported every 50 ms so a test sees its spans soon. */
export const tracingTo = (url: string): TracingConfig => ({
  exporter: 'otlp',
  url: `${url}/v1/traces`,
  headers: {},
  ratio: 1,
  batch: { scheduledDelayMillis: 50 },
  serviceName: 'openstarry-test',
  resourceAttributes: {},
});

/** The spans of a task's trace, once its last `invoke_agent` span (the one that says the outcome) and every parent arrived. */
export async function traceOf(receiver: OtlpReceiver, run: ScenarioRun): Promise<ReceivedSpan[]> {
  const last = await eventually(`the final invoke_agent span of ${run.workflowId}`, async () =>
    receiver.spans.find(
      (s) =>
        s.name === 'invoke_agent' &&
        s.attributes['gen_ai.agent.id'] === run.agentId &&
        s.attributes['starry.task.outcome'] !== undefined,
    ),
  );
  // Activity spans end before the workflow learns the result; give the last batch a moment.
  return eventually('the whole trace', async () => {
    const spans = receiver.spans.filter((s) => s.traceId === last.traceId);
    const ids = new Set(spans.map((s) => s.spanId));
    return spans.every((s) => !s.parentSpanId || ids.has(s.parentSpanId)) ? spans : undefined;
  });
}

/** One received metric data point: a sum's or gauge's value, a histogram's count, sum and buckets. */
export interface ReceivedPoint {
  name: string;
  unit: string;
  attributes: Record<string, unknown>;
  value?: number;
  count?: number;
  sum?: number;
  bounds?: number[];
  buckets?: number[];
  resource: Record<string, unknown>;
}

/** A collector that keeps what it received: spans, and every metric point of every export in arrival order. */
export interface OtlpCollector {
  /** OTLP/HTTP: metrics go to …/v1/metrics; gRPC: the endpoint as is. */
  url: string;
  spans: ReceivedSpan[];
  /** Cumulative points repeat with each export: `latest` reads the last of each series. */
  points: ReceivedPoint[];
  close(): Promise<void>;
}

/* eslint-disable @typescript-eslint/no-require-imports, @typescript-eslint/no-explicit-any */
const collector = (require('@opentelemetry/otlp-transformer/build/src/generated/root') as any).opentelemetry.proto
  .collector;

/** Decode an `ExportMetricsServiceRequest` into points. */
function decodePoints(body: Uint8Array): ReceivedPoint[] {
  const points: ReceivedPoint[] = [];
  for (const rm of collector.metrics.v1.ExportMetricsServiceRequest.decode(body).resourceMetrics as any[]) {
    const resource = otlpAttributes(rm.resource?.attributes);
    for (const sm of rm.scopeMetrics as any[])
      for (const m of sm.metrics as any[]) {
        const data = m.sum ?? m.histogram ?? m.gauge;
        for (const p of (data?.dataPoints ?? []) as any[])
          points.push({
            name: m.name,
            unit: m.unit,
            attributes: otlpAttributes(p.attributes),
            ...(p.asInt != null ? { value: otlpNumber(p.asInt) } : p.asDouble != null ? { value: p.asDouble } : {}),
            ...(m.histogram
              ? {
                  count: otlpNumber(p.count),
                  sum: p.sum,
                  bounds: p.explicitBounds,
                  buckets: (p.bucketCounts as any[]).map(otlpNumber),
                }
              : {}),
            resource,
          });
      }
  }
  return points;
}

/**
 * Start an OTLP/HTTP collector of metrics (`POST /v1/metrics`, protobuf).
 *
 * ```ts
 * const metrics = await startOtlpMetricsReceiver();
 * // ... a worker process with OTEL_EXPORTER_OTLP_ENDPOINT=metrics.url ...
 * latest(metrics.points, 'starry.pain', { 'starry.pain.code': 'EPERM' }).value // 1
 * ```
 */
export function startOtlpMetricsReceiver(): Promise<OtlpCollector> {
  const points: ReceivedPoint[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
        if (req.url === '/v1/metrics') points.push(...decodePoints(body));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        spans: [],
        points,
        close: () => new Promise<void>((r) => server.close(() => r())),
      }),
    ),
  );
}

/** A unary OTLP `Export` method of the collector's `service`, its request handed over as bytes. */
function exportMethod(service: string, response: any, receive: (body: Buffer) => void) {
  return {
    definition: {
      Export: {
        path: `/opentelemetry.proto.collector.${service}/Export`,
        requestStream: false,
        responseStream: false,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (m: any) => Buffer.from(response.encode(m).finish()),
        responseDeserialize: (b: Buffer) => response.decode(b),
      },
    } as grpc.ServiceDefinition,
    implementation: {
      Export: (call: grpc.ServerUnaryCall<Buffer, any>, done: grpc.sendUnaryData<any>) => {
        receive(call.request);
        done(null, response.create({}));
      },
    },
  };
}

/**
 * Start an OTLP/gRPC collector (the collector's TraceService and MetricsService, no TLS).
 *
 * ```ts
 * const receiver = await startOtlpGrpcReceiver();
 * // ... a worker with OTEL_EXPORTER_OTLP_PROTOCOL=grpc and OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url ...
 * ```
 */
export async function startOtlpGrpcReceiver(): Promise<OtlpCollector> {
  const spans: ReceivedSpan[] = [];
  const points: ReceivedPoint[] = [];
  const server = new grpc.Server();
  for (const m of [
    exportMethod('trace.v1.TraceService', collector.trace.v1.ExportTraceServiceResponse, (b) =>
      spans.push(...decodeTraceRequest(b)),
    ),
    exportMethod('metrics.v1.MetricsService', collector.metrics.v1.ExportMetricsServiceResponse, (b) =>
      points.push(...decodePoints(b)),
    ),
  ])
    server.addService(m.definition, m.implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    points,
    close: () => new Promise<void>((r) => server.tryShutdown(() => r())),
  };
}

/**
 * The latest value of a counter (or a histogram's latest `{count, sum}`) for each attribute set of `name`
 * that includes `match`, summed: cumulative points carry the total so far, so the last one counts.
 *
 * ```ts
 * latest(receiver.points, 'starry.pain', { 'starry.pain.code': 'EPERM' }) // { value: 1, count: 0, sum: 0 }
 * ```
 */
export function latest(
  points: readonly ReceivedPoint[],
  name: string,
  match: Record<string, unknown> = {},
): { value: number; count: number; sum: number; series: number } {
  const last = new Map<string, ReceivedPoint>();
  for (const p of points)
    if (p.name === name && Object.entries(match).every(([k, v]) => p.attributes[k] === v))
      last.set(JSON.stringify(Object.entries(p.attributes).sort()), p);
  const total = { value: 0, count: 0, sum: 0, series: last.size };
  for (const p of last.values()) {
    total.value += p.value ?? 0;
    total.count += p.count ?? 0;
    total.sum += p.sum ?? 0;
  }
  return total;
}
