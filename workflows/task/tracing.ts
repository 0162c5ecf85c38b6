/**
 * The task's telemetry (docs/OBSERVABILITY.md): its `invoke_agent` span around the ticks, a `chat` span
 * per LLM call and an `execute_tool` span per tool call, `TaskRun`'s facts as their events, and its
 * counts in the worker's metrics. On only when the worker said so in the task's first listing (in the
 * history, so a replay decides the same), and carried when the task continues as new.
 */
import { workflowInfo } from '@temporalio/workflow';
import { costUsd } from '../../core/pricing';
import {
  chatResultAttributes,
  chatSpan,
  errorType,
  remoteSpan,
  SPAN,
  taskSpanAttributes,
  toolSpan,
} from '../../core/telemetry';
import {
  classifyTaskFailure,
  enableMetrics,
  enableTracing,
  inSpan,
  markFailed,
  markFailedWith,
  metricsEnabled,
  startContext,
  tracingEnabled,
} from '../telemetry';
import type { TaskHook } from './hooks';
import type { TaskScope } from './scope';

export function tracing(t: TaskScope): TaskHook {
  // A run that continued as new carries the worker's answer in its input.
  if (t.input.tools) {
    if (t.input.traced) enableTracing();
    if (t.input.metered) enableMetrics();
  }
  return {
    name: 'tracing',
    async toolsListed(_t, listed) {
      if (listed.telemetry?.traces) enableTracing();
      if (listed.telemetry?.metrics) enableMetrics();
      return undefined;
    },
    task: (t, ticks) => {
      // One trace per task: a new task's span is a root, linked to whoever started it (a traced client's
      // context, else the submitter's traceparent); a run that continued as new is a child of the one before.
      const first = !workflowInfo().continuedFromExecutionRunId;
      const from = startContext();
      const caller = {
        ...(from ? { link: from } : {}),
        ...(t.input.traceparent ? { linkTo: remoteSpan(t.input.traceparent) } : {}),
      };
      const placed = first ? { root: true, ...caller } : from ? { parent: from } : {};
      const attributes = taskSpanAttributes({ ...t.input, llm: t.config.llm });
      return inSpan(
        { name: SPAN.task, attributes, ...placed },
        (span) => {
          t.span = span;
          if (span) t.run.traceId = span.spanContext().traceId;
          return ticks();
        },
        classifyTaskFailure,
      );
    },
    llmCall: (t, request, call) =>
      inSpan({ ...chatSpan(t.config.llm, request.tick, request.maxOutputTokens), kind: 'client' }, async (span) => {
        const answer = await call();
        const { price } = t.run.input;
        span?.setAttributes(chatResultAttributes(answer, price ? costUsd(answer.usage, price) : undefined));
        return answer;
      }),
    toolCall: (t, info, call) =>
      inSpan(toolSpan(info.call.name, info.callId, info.tick), async (span) => {
        const outcome = await call();
        if (outcome.failure !== undefined) markFailed(span, outcome.failure);
        t.flush(span); // pain on the call's span
        return outcome;
      }),
    ending(t, end) {
      const span = t.span;
      if (!span) return;
      span.setAttribute('starry.task.outcome', end.outcome);
      const reason = end.lock?.reason ?? end.reason;
      if (reason) span.setAttribute('starry.task.reason', reason.code);
      if (end.outcome === 'FAILED') markFailedWith(span, errorType(end.error), end.error?.message ?? 'task failed');
    },
    carried: () => ({ ...(tracingEnabled() ? { traced: true } : {}), ...(metricsEnabled() ? { metered: true } : {}) }),
  };
}
