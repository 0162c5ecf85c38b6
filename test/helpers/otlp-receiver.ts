/**
 * A collector for tests: the dev trace viewer (dev/trace-viewer.ts, an OTLP/HTTP server on loopback that
 * decodes the real protobuf wire format) on a free port, with every span it received kept in arrival
 * order, beyond the viewer's own bounds.
 */
import { eventually } from '../../dev/poll';
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
