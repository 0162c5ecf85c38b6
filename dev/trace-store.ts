/**
 * What the dev trace viewer (dev/trace-viewer.ts) keeps: OTLP/HTTP trace requests decoded from the real
 * protobuf wire format (the generated code `@opentelemetry/otlp-transformer` ships) into plain spans, and
 * the last traces in memory, bounded in traces and in spans per trace so a long-running `starry dev`
 * holds a fixed amount whatever its worker sends.
 */

/* eslint-disable @typescript-eslint/no-require-imports, @typescript-eslint/no-explicit-any */
// The package has no `exports` map and no types for its generated code: a deep require of static code,
// on first use (the CLI loads this module with `starry dev`'s options, whatever the command).
let requestType: any;
const ExportTraceServiceRequest = () =>
  (requestType ??= (require('@opentelemetry/otlp-transformer/build/src/generated/root') as any).opentelemetry.proto
    .collector.trace.v1.ExportTraceServiceRequest);

/** One received span: ids in hex, times in milliseconds since the epoch, attributes as plain values. */
export interface ReceivedSpan {
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  start: number;
  end: number;
  attributes: Record<string, unknown>;
  events: { name: string; time: number; attributes: Record<string, unknown> }[];
  links: { traceId?: string; spanId?: string }[];
  /** 0 unset, 1 ok, 2 error. */
  status: number;
  statusMessage?: string;
  resource: Record<string, unknown>;
}

// 64-bit integers decode to {low, high} without the `long` package; nanoseconds since the epoch exceed
// 2^53, so a time keeps ~0.25 µs precision as a double: plenty for a waterfall.
/** An OTLP number (a protobufjs Long for 64-bit fields) as a JS number. */
export const otlpNumber = (v: any) => (v && typeof v === 'object' && 'low' in v ? v.high * 2 ** 32 + (v.low >>> 0) : v);
const ms = (nanos: any) => Number(otlpNumber(nanos) ?? 0) / 1e6;
const hex = (b: Uint8Array | undefined) => (b && b.length ? Buffer.from(b).toString('hex') : undefined);
function value(v: any): unknown {
  const k = v?.value as string | undefined; // the oneof's name
  if (!k) return undefined;
  if (k === 'arrayValue') return (v.arrayValue.values as any[]).map(value);
  if (k === 'kvlistValue') return otlpAttributes(v.kvlistValue.values);
  if (k === 'bytesValue') return hex(v.bytesValue);
  return otlpNumber(v[k]);
}
/** OTLP key-values as plain attributes. */
export function otlpAttributes(kvs: any[] = []): Record<string, unknown> {
  return Object.fromEntries(kvs.map((kv) => [kv.key, value(kv.value)]));
}

/**
 * Decode the body of an OTLP/HTTP `POST /v1/traces` (protobuf, already gunzipped).
 *
 * ```ts
 * const spans = decodeTraceRequest(body); // [{ name: 'invoke_agent', traceId: '5b8e…', … }]
 * ```
 *
 * @throws Error when the body is not an `ExportTraceServiceRequest`.
 */
export function decodeTraceRequest(body: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of ExportTraceServiceRequest().decode(body).resourceSpans as any[]) {
    const resource = otlpAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans as any[])
      for (const s of ss.spans as any[]) {
        const traceId = hex(s.traceId);
        const spanId = hex(s.spanId);
        if (!traceId || !spanId) continue; // not a span anyone can place
        spans.push({
          name: s.name,
          kind: s.kind,
          traceId,
          spanId,
          ...(hex(s.parentSpanId) ? { parentSpanId: hex(s.parentSpanId) } : {}),
          start: ms(s.startTimeUnixNano),
          end: ms(s.endTimeUnixNano),
          attributes: otlpAttributes(s.attributes),
          events: (s.events as any[]).map((e) => ({
            name: e.name,
            time: ms(e.timeUnixNano),
            attributes: otlpAttributes(e.attributes),
          })),
          links: (s.links as any[]).map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
          status: s.status?.code ?? 0,
          ...(s.status?.message ? { statusMessage: s.status.message } : {}),
          resource,
        });
      }
  }
  return spans;
}

/** One trace as stored: its spans in arrival order and how many the bound dropped. */
export interface StoredTrace {
  traceId: string;
  spans: ReceivedSpan[];
  dropped: number;
}

/** What the list of traces shows of one. */
export interface TraceSummary {
  traceId: string;
  /** The earliest span without a parent here (the task's `invoke_agent`), else the earliest span. */
  rootName: string;
  agentId?: string;
  taskId?: string;
  workflowId?: string;
  /** `starry.task.outcome` of the task's final run, once it ended. */
  outcome?: string;
  /** Without an outcome: the task's state as Temporal has it (the viewer's `taskState`), e.g. WAITING_FOR_APPROVAL. */
  state?: string;
  service?: string;
  start: number;
  durationMs: number;
  spanCount: number;
  /** Spans whose status is ERROR. */
  errors: number;
  dropped: number;
}

export interface TraceStoreLimits {
  /** Traces kept; the one that received a span least recently goes first. Default 100. */
  maxTraces?: number;
  /** Spans kept per trace. Default 2000. */
  maxSpans?: number;
}

/**
 * The last traces, bounded: at most `maxTraces` (the least recently updated is forgotten) and
 * `maxSpans` spans each. A full trace still takes a span that holds its shape — a root, or the parent of
 * spans it keeps (a task's `invoke_agent` ends, and arrives, last) — in place of its oldest leaf; other
 * spans beyond the bound are counted as dropped.
 *
 * ```ts
 * const store = new TraceStore({ maxTraces: 50, maxSpans: 500 });
 * store.add(decodeTraceRequest(body));
 * store.summaries()[0]?.rootName; // 'invoke_agent'
 * ```
 */
export class TraceStore {
  readonly maxTraces: number;
  readonly maxSpans: number;
  // Map order is the recency order: a trace that receives a span moves to the end.
  private readonly byId = new Map<string, StoredTrace>();

  constructor(limits: TraceStoreLimits = {}) {
    this.maxTraces = positive(limits.maxTraces ?? 100, 'maxTraces');
    this.maxSpans = positive(limits.maxSpans ?? 2000, 'maxSpans');
  }

  /** Keep `spans` (of any traces). */
  add(spans: ReceivedSpan[]): void {
    for (const span of spans) {
      const trace = this.byId.get(span.traceId) ?? { traceId: span.traceId, spans: [], dropped: 0 };
      this.byId.delete(span.traceId);
      this.byId.set(span.traceId, trace);
      this.keep(trace, span);
    }
    for (const id of this.byId.keys()) {
      if (this.byId.size <= this.maxTraces) break;
      this.byId.delete(id);
    }
  }

  private keep(trace: StoredTrace, span: ReceivedSpan): void {
    if (trace.spans.length < this.maxSpans) {
      trace.spans.push(span);
      return;
    }
    trace.dropped++;
    const parents = new Set(trace.spans.map((s) => s.parentSpanId));
    const holdsShape = !span.parentSpanId || parents.has(span.spanId);
    const leaf = holdsShape ? trace.spans.findIndex((s) => s.parentSpanId && !parents.has(s.spanId)) : -1;
    if (leaf < 0) return;
    trace.spans.splice(leaf, 1);
    trace.spans.push(span);
  }

  /** A trace by its id (32 hex digits), or undefined when it never came or was forgotten. */
  get(traceId: string): StoredTrace | undefined {
    return this.byId.get(traceId.toLowerCase());
  }

  /** The traces kept, the most recently started first. */
  summaries(): TraceSummary[] {
    return [...this.byId.values()].map(summarize).sort((a, b) => b.start - a.start);
  }

  /** The most recent trace of a task's workflow id (`agent-a1-task-1`), if one is kept. */
  forWorkflow(workflowId: string): TraceSummary | undefined {
    return this.summaries().find((t) => t.workflowId === workflowId);
  }
}

function positive(n: number, name: string): number {
  if (!Number.isInteger(n) || n < 1) throw new Error(`TraceStore: ${name} must be a whole number ≥ 1; got ${n}`);
  return n;
}

/** The spans of a trace without a parent among them, the earliest first. */
export function rootsOf(spans: ReceivedSpan[]): ReceivedSpan[] {
  const ids = new Set(spans.map((s) => s.spanId));
  return spans.filter((s) => !s.parentSpanId || !ids.has(s.parentSpanId)).sort((a, b) => a.start - b.start);
}

/** What the list shows of a trace. */
export function summarize(trace: StoredTrace): TraceSummary {
  const { spans } = trace;
  const root = rootsOf(spans)[0] ?? spans[0]!;
  const task = spans.filter((s) => s.name === 'invoke_agent').sort((a, b) => a.start - b.start);
  const first = task[0] ?? root;
  const ended = task.find((s) => s.attributes['starry.task.outcome'] !== undefined);
  const start = Math.min(...spans.map((s) => s.start));
  const text = (v: unknown) => (v === undefined ? undefined : String(v));
  return {
    traceId: trace.traceId,
    rootName: root.name,
    agentId: text(first.attributes['gen_ai.agent.id']),
    taskId: text(first.attributes['starry.task.id']),
    workflowId: text(first.attributes['temporal.workflow.id']),
    outcome: text(ended?.attributes['starry.task.outcome']),
    service: text(root.resource['service.name']),
    start,
    durationMs: Math.max(...spans.map((s) => s.end)) - start,
    spanCount: spans.length,
    errors: spans.filter((s) => s.status === 2).length,
    dropped: trace.dropped,
  };
}
