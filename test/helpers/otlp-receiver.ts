/**
 * A collector for tests: an OTLP/HTTP server, or an OTLP/gRPC one (the collector's TraceService and
 * MetricsService), on loopback, decoding the real protobuf wire format (the generated code
 * `@opentelemetry/otlp-transformer` ships) into plain spans and metric points.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import * as grpc from '@grpc/grpc-js';

/* eslint-disable @typescript-eslint/no-require-imports, @typescript-eslint/no-explicit-any */
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root') as any;
const { ExportTraceServiceRequest, ExportTraceServiceResponse } = root.opentelemetry.proto.collector.trace.v1;
const { ExportMetricsServiceRequest, ExportMetricsServiceResponse } = root.opentelemetry.proto.collector.metrics.v1;

/** One received span, its ids in hex and its attributes as plain values. */
export interface ReceivedSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  links: { traceId?: string; spanId?: string }[];
  /** 0 unset, 1 ok, 2 error. */
  status: number;
  resource: Record<string, unknown>;
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

export interface OtlpReceiver {
  /** e.g. http://127.0.0.1:40123 (OTLP/HTTP: traces go to …/v1/traces, metrics to …/v1/metrics). */
  url: string;
  spans: ReceivedSpan[];
  /** Every point of every export, in arrival order (cumulative points repeat with each export). */
  points: ReceivedPoint[];
  close(): Promise<void>;
}

const num = (v: any) => (v && typeof v === 'object' && 'low' in v ? v.high * 2 ** 32 + (v.low >>> 0) : v);
const hex = (b: Uint8Array | undefined) => (b && b.length ? Buffer.from(b).toString('hex') : undefined);
function value(v: any): unknown {
  const k = v?.value as string | undefined; // the oneof's name
  if (!k) return undefined;
  if (k === 'arrayValue') return (v.arrayValue.values as any[]).map(value);
  if (k === 'kvlistValue') return attrs(v.kvlistValue.values);
  return num(v[k]);
}
function attrs(kvs: any[] = []): Record<string, unknown> {
  return Object.fromEntries(kvs.map((kv) => [kv.key, value(kv.value)]));
}

function decodeSpans(request: any, spans: ReceivedSpan[]): void {
  for (const rs of request.resourceSpans)
    for (const ss of rs.scopeSpans)
      for (const s of ss.spans)
        spans.push({
          name: s.name,
          kind: s.kind,
          traceId: hex(s.traceId)!,
          spanId: hex(s.spanId)!,
          parentSpanId: hex(s.parentSpanId),
          attributes: attrs(s.attributes),
          events: (s.events as any[]).map((e) => ({ name: e.name, attributes: attrs(e.attributes) })),
          links: (s.links as any[]).map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
          status: s.status?.code ?? 0,
          resource: attrs(rs.resource?.attributes),
        });
}

function decodePoints(request: any, points: ReceivedPoint[]): void {
  for (const rm of request.resourceMetrics)
    for (const sm of rm.scopeMetrics)
      for (const m of sm.metrics) {
        const data = m.sum ?? m.histogram ?? m.gauge;
        for (const p of (data?.dataPoints ?? []) as any[])
          points.push({
            name: m.name,
            unit: m.unit,
            attributes: attrs(p.attributes),
            ...(p.asInt != null ? { value: num(p.asInt) } : p.asDouble != null ? { value: p.asDouble } : {}),
            ...(m.histogram
              ? {
                  count: num(p.count),
                  sum: p.sum,
                  bounds: p.explicitBounds,
                  buckets: (p.bucketCounts as any[]).map(num),
                }
              : {}),
            resource: attrs(rm.resource?.attributes),
          });
      }
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
export function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const points: ReceivedPoint[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
        if (req.url === '/v1/traces') decodeSpans(ExportTraceServiceRequest.decode(body), spans);
        if (req.url === '/v1/metrics') decodePoints(ExportMetricsServiceRequest.decode(body), points);
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        spans,
        points,
        close: () => new Promise<void>((r) => server.close(() => r())),
      }),
    ),
  );
}

/** A unary OTLP Export method served over gRPC, decoding its request with `decode`. */
function exportMethod(service: string, request: any, response: any, decode: (message: any) => void) {
  return {
    definition: {
      Export: {
        path: `/opentelemetry.proto.collector.${service}/Export`,
        requestStream: false,
        responseStream: false,
        requestSerialize: (m: any) => Buffer.from(request.encode(m).finish()),
        requestDeserialize: (b: Buffer) => request.decode(b),
        responseSerialize: (m: any) => Buffer.from(response.encode(m).finish()),
        responseDeserialize: (b: Buffer) => response.decode(b),
      },
    } as grpc.ServiceDefinition,
    implementation: {
      Export: (call: grpc.ServerUnaryCall<any, any>, done: grpc.sendUnaryData<any>) => {
        decode(call.request);
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
    exportMethod('trace.v1.TraceService', ExportTraceServiceRequest, ExportTraceServiceResponse, (r) =>
      decodeSpans(r, spans),
    ),
    exportMethod('metrics.v1.MetricsService', ExportMetricsServiceRequest, ExportMetricsServiceResponse, (r) =>
      decodePoints(r, points),
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
