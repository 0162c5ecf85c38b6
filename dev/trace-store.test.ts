import { tracePage } from './trace-pages';
import { decodeTraceRequest, TraceStore, type ReceivedSpan } from './trace-store';

/* eslint-disable @typescript-eslint/no-require-imports, @typescript-eslint/no-explicit-any */
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root') as any;
const { ExportTraceServiceRequest } = root.opentelemetry.proto.collector.trace.v1;

const T0 = Date.UTC(2026, 10, 26, 21, 0, 0);
let seq = 0;
/** A span of trace `trace` (a short name padded to 32 hex digits). */
function span(trace: string, name: string, parent?: string, over: Partial<ReceivedSpan> = {}): ReceivedSpan {
  const n = ++seq;
  return {
    name,
    kind: 1,
    traceId: trace.padStart(32, '0'),
    spanId: (over.spanId ?? String(n)).padStart(16, '0'),
    ...(parent ? { parentSpanId: parent.padStart(16, '0') } : {}),
    start: T0 + n,
    end: T0 + n + 1,
    attributes: {},
    events: [],
    links: [],
    status: 0,
    resource: {},
    ...over,
  };
}

describe('TraceStore', () => {
  it('keeps the last maxTraces traces: the one that received a span least recently is forgotten first', () => {
    const store = new TraceStore({ maxTraces: 2 });
    store.add([span('a', 'one')]);
    store.add([span('b', 'two')]);
    store.add([span('a', 'one more')]); // a is now the most recent
    store.add([span('c', 'three')]);
    expect(store.get('a'.padStart(32, '0'))?.spans.map((s) => s.name)).toEqual(['one', 'one more']);
    expect(store.get('b'.padStart(32, '0'))).toBeUndefined();
    expect(store.summaries().map((t) => t.rootName)).toEqual(['three', 'one']);
  });

  it('keeps at most maxSpans spans of a trace and counts the others as dropped', () => {
    const store = new TraceStore({ maxSpans: 3 });
    store.add([span('a', 'root', undefined, { spanId: 'r' })]);
    store.add(['x', 'y', 'z', 'w'].map((n) => span('a', n, 'r')));
    const trace = store.get('a'.padStart(32, '0'))!;
    expect(trace.spans.map((s) => s.name)).toEqual(['root', 'x', 'y']);
    expect(trace.dropped).toBe(2);
    expect(store.summaries()[0]).toMatchObject({ spanCount: 3, dropped: 2 });
  });

  it("still takes the spans that hold a full trace's shape (a root, a parent of kept spans), in place of its oldest leaves", () => {
    const store = new TraceStore({ maxSpans: 3 });
    // A task's spans arrive children first: its invoke_agent ends, and is exported, last.
    store.add([span('a', 'chat 1', 'task'), span('a', 'chat 2', 'task'), span('a', 'chat 3', 'task')]);
    store.add([span('a', 'invoke_agent', undefined, { spanId: 'task', start: T0 })]);
    const trace = store.get('a'.padStart(32, '0'))!;
    expect(trace.spans.map((s) => s.name)).toEqual(['chat 2', 'chat 3', 'invoke_agent']);
    expect(trace.dropped).toBe(1);
    expect(store.summaries()[0]?.rootName).toBe('invoke_agent');
  });

  it('refuses bounds that are not whole numbers of at least 1, naming them', () => {
    expect(() => new TraceStore({ maxTraces: 0 })).toThrow('TraceStore: maxTraces must be a whole number ≥ 1; got 0');
    expect(() => new TraceStore({ maxSpans: 1.5 })).toThrow('TraceStore: maxSpans must be a whole number ≥ 1; got 1.5');
  });

  it("summarizes a task's trace: its agent and task ids, the final run's outcome, its time span and its errors", () => {
    const store = new TraceStore();
    const task = { 'gen_ai.agent.id': 'a1', 'starry.task.id': 'task-1', 'temporal.workflow.id': 'agent-a1-task-1' };
    store.add([
      span('a', 'execute_tool fs.read', 't', { status: 2, start: T0 + 10, end: T0 + 20 }),
      span('a', 'invoke_agent', 't2', { spanId: 't2b', attributes: { ...task, 'starry.task.outcome': 'COMPLETED' } }),
      span('a', 'invoke_agent', undefined, { spanId: 't', attributes: task, start: T0, end: T0 + 1500 }),
    ]);
    expect(store.summaries()).toEqual([
      {
        traceId: 'a'.padStart(32, '0'),
        rootName: 'invoke_agent',
        agentId: 'a1',
        taskId: 'task-1',
        workflowId: 'agent-a1-task-1',
        outcome: 'COMPLETED',
        service: undefined,
        start: T0,
        durationMs: 1500,
        spanCount: 3,
        errors: 1,
        dropped: 0,
      },
    ]);
    expect(store.forWorkflow('agent-a1-task-1')?.traceId).toBe('a'.padStart(32, '0'));
  });
});

describe('decodeTraceRequest', () => {
  it('reads the OTLP protobuf an exporter sends: hex ids, times in ms, attributes, events, status and resource', () => {
    const bytes = (h: string) => Buffer.from(h, 'hex');
    const nanos = (ms: number) => String(BigInt(ms) * 1_000_000n);
    const kv = (key: string, value: object) => ({ key, value });
    const body = ExportTraceServiceRequest.encode(
      ExportTraceServiceRequest.fromObject({
        resourceSpans: [
          {
            resource: { attributes: [kv('service.name', { stringValue: 'openstarry-worker' })] },
            scopeSpans: [
              {
                spans: [
                  {
                    traceId: bytes('0af7651916cd43dd8448eb211c80319c'),
                    spanId: bytes('b7ad6b7169203331'),
                    parentSpanId: bytes('00f067aa0ba902b7'),
                    name: 'execute_tool fs.read',
                    kind: 1,
                    startTimeUnixNano: nanos(T0),
                    endTimeUnixNano: nanos(T0 + 25),
                    attributes: [kv('error.type', { stringValue: 'EPERM' }), kv('starry.tick', { intValue: 1 })],
                    events: [
                      {
                        name: 'starry.pain',
                        timeUnixNano: nanos(T0 + 20),
                        attributes: [kv('starry.pain.level', { intValue: 3 })],
                      },
                    ],
                    status: { code: 2, message: 'EPERM' },
                  },
                ],
              },
            ],
          },
        ],
      }),
    ).finish();
    expect(decodeTraceRequest(body)).toEqual([
      {
        name: 'execute_tool fs.read',
        kind: 1,
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
        parentSpanId: '00f067aa0ba902b7',
        start: T0,
        end: T0 + 25,
        attributes: { 'error.type': 'EPERM', 'starry.tick': 1 },
        events: [{ name: 'starry.pain', time: T0 + 20, attributes: { 'starry.pain.level': 3 } }],
        links: [],
        status: 2,
        statusMessage: 'EPERM',
        resource: { 'service.name': 'openstarry-worker' },
      },
    ]);
  });

  it('throws on a body that is not an ExportTraceServiceRequest', () => {
    expect(() => decodeTraceRequest(Buffer.from('not protobuf at all, {"json": true}'))).toThrow();
  });
});

describe('the trace page', () => {
  it('escapes what comes from a span: names, attributes and events show as text, never as markup', () => {
    const evil = '<img src=x onerror="alert(1)">&';
    const trace = {
      traceId: 'a'.padStart(32, '0'),
      dropped: 0,
      spans: [
        span('a', evil, undefined, {
          attributes: { [evil]: evil },
          events: [{ name: evil, time: T0, attributes: { k: evil } }],
        }),
      ],
    };
    const html = tracePage(trace, true);
    expect(html).not.toContain('<img');
    expect(html).not.toContain('"alert(1)"');
    expect(html).toContain('&#60;img src=x onerror=&#34;alert(1)&#34;&#62;&#38;');
  });
});
