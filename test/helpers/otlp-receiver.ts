/**
 * A collector for tests: an OTLP/HTTP server on loopback that decodes the real protobuf wire format (the
 * generated code `@opentelemetry/otlp-transformer` ships) into plain spans.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';

/* eslint-disable @typescript-eslint/no-require-imports, @typescript-eslint/no-explicit-any */
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root') as any;
const { ExportTraceServiceRequest } = root.opentelemetry.proto.collector.trace.v1;

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

export interface OtlpReceiver {
  /** e.g. http://127.0.0.1:40123 (traces go to …/v1/traces). */
  url: string;
  spans: ReceivedSpan[];
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
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
        if (req.url === '/v1/traces')
          for (const rs of ExportTraceServiceRequest.decode(body).resourceSpans)
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
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        spans,
        close: () => new Promise<void>((r) => server.close(() => r())),
      }),
    ),
  );
}
