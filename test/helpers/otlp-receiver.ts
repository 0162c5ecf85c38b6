/**
 * A collector for tests, decoding the real protobuf wire format:
 * - `startOtlpReceiver`: OTLP/HTTP on loopback. Traces go to the dev trace viewer (dev/trace-viewer.ts,
 *   whose pages it serves too), metrics are decoded here; every span and point is kept in arrival order,
 *   beyond the viewer's own bounds.
 * - `startOtlpGrpcReceiver`: OTLP/gRPC (the collector's TraceService and MetricsService).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { eventually } from '../../dev/poll';
import { decodeTraceRequest, otlpAttributes, otlpNumber } from '../../dev/trace-store';
import { startTraceViewer, type ReceivedSpan, type TraceViewer, type TraceViewerOptions } from '../../dev/trace-viewer';
import type { TracingConfig } from '../../workers/otel';
import type { ScenarioRun } from './scenarios';

export type { ReceivedSpan } from '../../dev/trace-viewer';

/* eslint-disable @typescript-eslint/no-require-imports, @typescript-eslint/no-explicit-any */
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root') as any;
const { ExportTraceServiceResponse } = root.opentelemetry.proto.collector.trace.v1;
const { ExportMetricsServiceRequest, ExportMetricsServiceResponse } = root.opentelemetry.proto.collector.metrics.v1;

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
  /** A base-2 exponential histogram's scale (absent for explicit buckets). */
  scale?: number;
  /** 1 delta, 2 cumulative (sums and histograms). */
  temporality?: number;
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** e.g. http://127.0.0.1:40123 (OTLP/HTTP: traces go to …/v1/traces, metrics to …/v1/metrics). */
  url: string;
  spans: ReceivedSpan[];
  /** Every point of every export, in arrival order (cumulative points repeat with each export). */
  points: ReceivedPoint[];
  close(): Promise<void>;
}

function decodePoints(request: any, points: ReceivedPoint[]): void {
  for (const rm of request.resourceMetrics)
    for (const sm of rm.scopeMetrics)
      for (const m of sm.metrics) {
        const data = m.sum ?? m.histogram ?? m.exponentialHistogram ?? m.gauge;
        for (const p of (data?.dataPoints ?? []) as any[])
          points.push({
            name: m.name,
            unit: m.unit,
            ...(data?.aggregationTemporality ? { temporality: data.aggregationTemporality } : {}),
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
            ...(m.exponentialHistogram ? { count: otlpNumber(p.count), sum: p.sum, scale: p.scale } : {}),
            resource: otlpAttributes(rm.resource?.attributes),
          });
      }
}

/**
 * Start a receiver: the viewer's pages and `/v1/traces` through to the viewer, `/v1/metrics` decoded here.
 *
 * ```ts
 * const receiver = await startOtlpReceiver();
 * // ... a worker exporting to `${receiver.url}/v1/traces` ...
 * receiver.spans.find((s) => s.name === 'invoke_agent');
 * ```
 */
export async function startOtlpReceiver(
  opts: Pick<TraceViewerOptions, 'taskState'> = {},
): Promise<OtlpReceiver & { viewer: TraceViewer }> {
  const spans: ReceivedSpan[] = [];
  const points: ReceivedPoint[] = [];
  const viewer = await startTraceViewer({ ...opts, port: 0, onSpans: (received) => spans.push(...received) });
  const server = http.createServer((req, res) => {
    if (req.url !== '/v1/metrics') {
      const upstream = http.request(`${viewer.url}${req.url}`, { method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      req.pipe(upstream);
      return;
    }
    const chunks: Buffer[] = [];
    req
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
        decodePoints(ExportMetricsServiceRequest.decode(body), points);
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    points,
    viewer,
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await viewer.close();
    },
  };
}

/** A unary OTLP Export method served over gRPC, handing its request's bytes to `take`. */
function exportMethod(service: string, response: any, take: (body: Buffer) => void) {
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
        take(call.request);
        done(null, response.create({}));
      },
    },
  };
}

/**
 * Start an OTLP/gRPC receiver (the collector's TraceService and MetricsService, no TLS).
 *
 * ```ts
 * const receiver = await startOtlpGrpcReceiver();
 * // ... a worker with OTEL_EXPORTER_OTLP_PROTOCOL=grpc and OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url ...
 * ```
 */
export async function startOtlpGrpcReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const points: ReceivedPoint[] = [];
  const server = new grpc.Server();
  for (const m of [
    exportMethod('trace.v1.TraceService', ExportTraceServiceResponse, (b) => spans.push(...decodeTraceRequest(b))),
    exportMethod('metrics.v1.MetricsService', ExportMetricsServiceResponse, (b) =>
      decodePoints(ExportMetricsServiceRequest.decode(b), points),
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
