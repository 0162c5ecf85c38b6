/**
 * Following a task as it runs, from its workflow history: Temporal's own record of every LLM call, tool
 * call, signal and the end. `starry run`, `starry watch` and `starry logs` print these events; the
 * history is long-polled (`waitNewEvent`), so a tick shows the moment its activity completes.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  isStored,
  type LlmCallInput,
  type LlmResponse,
  type SummaryInput,
  type SummaryResponse,
  type TranscriptEntry,
} from '../core/llm';
import type { AlertInput } from '../activities/alert';
import type { ApprovalsReport, PendingApproval } from '../core/approval';
import type { TaskResult } from '../core/types';
import type { TaskRunOutput } from '../core/task-run';
import { AgentStateKey, LockReasonKey } from '../workflows/search-attributes';
import type { NormalizedError } from '../core/errors';
import { agentOfTaskWorkflowId } from '../core/tenant';
import { SKIPPED_PREFIX } from '../core/transcript';
import { currentRun, followHistory, type HistoryEvent } from './history';

/** How a task's workflow closed. */
export type EndStatus = 'completed' | 'failed' | 'canceled' | 'terminated' | 'timed out' | 'continued as new';

/** What happened in a task, in the order it happened. */
export type TaskEvent =
  /**
   * An LLM call was scheduled; `injected` holds what the model sees for the first time beyond plain tool
   * output: the pain text of failed tools, alerts, human messages.
   */
  | { kind: 'llm-call'; tick: number; injected: { label: 'pain' | 'injected'; text: string }[] }
  | {
      kind: 'llm';
      tick: number;
      text?: string;
      toolCalls: { name: string; args: unknown }[];
      tokens: number;
      usage?: { inputTokens: number; outputTokens: number; cachedInputTokens?: number };
      /** The answer's message in the transcript store (its SHA-256), when the call stored it. */
      ref?: string;
    }
  | { kind: 'llm-failed'; tick: number; message: string }
  /**
   * The `summarize` context strategy replaced calls `calls` by a summary (`text`, its `tokens`), or
   * could not (`error`): they left the context without one.
   */
  | { kind: 'summary'; tick: number; calls: [number, number]; text?: string; tokens?: number; error?: string }
  | { kind: 'tool-call'; tick: number; name: string; args: unknown }
  | { kind: 'tool'; tick: number; name: string; ok: boolean; error?: NormalizedError }
  | { kind: 'tool-failed'; tick: number; name: string; message: string }
  /** A daemon alert was raised: `reason` in one line, `alert` what was sent. */
  | { kind: 'alert'; reason: string; alert?: AlertInput }
  | { kind: 'signal'; name: string; payload: unknown }
  /** Calls of the turn wait for a human's decision (the task told its agent so). */
  | { kind: 'approval'; agentId: string; waiting: PendingApproval[] }
  /** The agent's state as the task reported it (its `AgentState` search attribute) changed. */
  | { kind: 'state'; state: string; lockReason?: string }
  /** The task moved to a fresh history (continue-as-new); following goes on in the new run. */
  | { kind: 'continued'; runId: string }
  | {
      kind: 'end';
      status: EndStatus;
      message?: string;
      /** What the task returned (also when it failed with its result: a lock, a fatal error). */
      result?: TaskResult;
    };

/** The first payload of a history event's payloads, decoded. */
export const decode = <T>(payloads: { payloads?: Payload[] | null } | null | undefined): T | undefined => {
  const p = payloads?.payloads?.[0];
  return p ? defaultPayloadConverter.fromPayload<T>(p) : undefined;
};

/**
 * What the system put after the model's last answer: the results of tools that failed (the guide's pain
 * text) and the messages it injected (alerts, human messages). A call whose context is a delta appends
 * exactly that (after its base, which ends with the answer); a whole context has it after the last answer.
 */
function injectedSince(req: LlmCallInput, failedTools: Set<string>): { label: 'pain' | 'injected'; text: string }[] {
  let since: TranscriptEntry[];
  if (req.context) {
    if (!req.context.base) return [];
    since = req.context.append;
  } else {
    const messages = req.messages ?? [];
    const last = messages.map((m) => m.role).lastIndexOf('assistant');
    if (last < 0) return [];
    since = messages.slice(last + 1);
  }
  // What the workflow wrote is inline; stored entries are tool output, never pain. In a delta every
  // inline tool result is the workflow's: pain, also for a call it refused before any activity ran
  // (an unknown tool, bad JSON, a schema mismatch), or a call a halt or a breaker skipped.
  const delta = req.context !== undefined;
  return since.flatMap((m): { label: 'pain' | 'injected'; text: string }[] => {
    if (isStored(m)) return [];
    if (m.role === 'tool') {
      if (delta) return m.text.startsWith(SKIPPED_PREFIX) ? [] : [{ label: 'pain', text: m.text }];
      return failedTools.has(m.name) ? [{ label: 'pain', text: m.text }] : [];
    }
    return m.role === 'user' || m.role === 'system' ? [{ label: 'injected', text: m.text }] : [];
  });
}

/**
 * The `AgentState` (and `LockReason`) a search attribute upsert writes, if it writes one: how a workflow
 * says its agent's state changed (workflows/search-attributes.ts).
 */
export function agentStateOf(e: HistoryEvent): { state: string; lockReason?: string } | undefined {
  const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
  const raw = fields?.[AgentStateKey.name];
  if (!raw) return undefined;
  const state = defaultPayloadConverter.fromPayload<unknown>(raw);
  if (typeof state !== 'string') return undefined;
  const lock = fields?.[LockReasonKey.name];
  const lockReason = lock ? defaultPayloadConverter.fromPayload<unknown>(lock) : undefined;
  return { state, ...(typeof lockReason === 'string' && lockReason ? { lockReason } : {}) };
}

/** A daemon alert in one line: `CODE: message`. */
export const alertReason = (alert: { reason?: { code?: string; message?: string } } | undefined): string =>
  `${alert?.reason?.code ?? ''}: ${alert?.reason?.message ?? ''}`;

/** How a workflow's run closed, when `e` is its close (continue-as-new aside: the chain goes on). */
export function closeOf(
  e: HistoryEvent,
): { status: Exclude<EndStatus, 'continued as new'>; message?: string } | undefined {
  if (e.workflowExecutionCompletedEventAttributes) return { status: 'completed' };
  const failed = e.workflowExecutionFailedEventAttributes;
  if (failed) return { status: 'failed', ...(failed.failure?.message ? { message: failed.failure.message } : {}) };
  if (e.workflowExecutionCanceledEventAttributes) return { status: 'canceled' };
  const terminated = e.workflowExecutionTerminatedEventAttributes;
  if (terminated) return { status: 'terminated', ...(terminated.reason ? { message: terminated.reason } : {}) };
  if (e.workflowExecutionTimedOutEventAttributes) return { status: 'timed out' };
  return undefined;
}

/**
 * Turns history events into task events. Keeps what it needs across events (the scheduled activities,
 * to name what completed), so feed it every event of one run, in order.
 */
export class TaskEventDecoder {
  private readonly scheduled = new Map<string, { type: string; input: unknown }>();
  /** Tools that failed since the last LLM call: their results are pain. */
  private failedTools = new Set<string>();
  /** The result a halted task handed to its agent (`taskEnded`). */
  private handedOver: TaskResult | undefined;

  decode(e: HistoryEvent): TaskEvent[] {
    const id = String(e.eventId ?? '');
    if (e.activityTaskScheduledEventAttributes) {
      const a = e.activityTaskScheduledEventAttributes;
      const type = a.activityType?.name ?? '';
      const input = decode<unknown>(a.input);
      this.scheduled.set(id, { type, input });
      if (type === 'llm') {
        const req = input as LlmCallInput;
        const injected = injectedSince(req, this.failedTools);
        this.failedTools = new Set();
        return [{ kind: 'llm-call', tick: req.tick, injected }];
      }
      if (type === 'tool') {
        const req = input as { name: string; args: unknown; tick: number };
        return [{ kind: 'tool-call', tick: req.tick, name: req.name, args: req.args }];
      }
      if (type === 'summarize') return [];
      if (type === 'alert') {
        const alert = input as AlertInput;
        return [{ kind: 'alert', reason: alertReason(alert), alert }];
      }
      return [];
    }
    const done = e.activityTaskCompletedEventAttributes;
    if (done) {
      const s = this.scheduled.get(String(done.scheduledEventId ?? ''));
      if (s?.type === 'llm') {
        const req = s.input as LlmCallInput;
        const res = decode<LlmResponse>(done.result);
        return [
          {
            kind: 'llm',
            tick: req.tick,
            ...(res?.text ? { text: res.text } : {}),
            toolCalls: (res?.toolCalls ?? []).map((c) => ({ name: c.name, args: c.args })),
            tokens: (res?.usage?.inputTokens ?? 0) + (res?.usage?.outputTokens ?? 0),
            ...(res?.usage ? { usage: res.usage } : {}),
            ...(res?.message?.ref ? { ref: res.message.ref } : {}),
          },
        ];
      }
      if (s?.type === 'summarize') {
        const req = s.input as SummaryInput;
        const res = decode<SummaryResponse>(done.result);
        return [
          {
            kind: 'summary',
            tick: req.tick,
            calls: res?.summary.covers.calls ?? req.covers.calls,
            ...(res?.text ? { text: res.text } : {}),
            tokens: (res?.usage.inputTokens ?? 0) + (res?.usage.outputTokens ?? 0),
          },
        ];
      }
      if (s?.type === 'tool') {
        const req = s.input as { name: string; tick: number };
        const res = decode<{ success: boolean; error?: NormalizedError }>(done.result);
        if (!res?.success) this.failedTools.add(req.name);
        return [
          {
            kind: 'tool',
            tick: req.tick,
            name: req.name,
            ok: !!res?.success,
            ...(res?.error ? { error: res.error } : {}),
          },
        ];
      }
      return [];
    }
    const failed = e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes;
    if (failed) {
      const s = this.scheduled.get(String(failed.scheduledEventId ?? ''));
      const message = failed.failure?.cause?.message ?? failed.failure?.message ?? 'failed';
      if (s?.type === 'llm') return [{ kind: 'llm-failed', tick: (s.input as LlmCallInput).tick, message }];
      if (s?.type === 'summarize') {
        const req = s.input as SummaryInput;
        return [{ kind: 'summary', tick: req.tick, calls: req.covers.calls, error: message }];
      }
      if (s?.type === 'tool') {
        const req = s.input as { name: string; tick: number };
        // A failed call carries its NormalizedError: unless fatal, the agent feels it as pain, as it does a result.
        const error = decode<NormalizedError>(failed.failure?.applicationFailureInfo?.details);
        if (error?.code && error.kind !== 'fatal') {
          this.failedTools.add(req.name);
          return [{ kind: 'tool', tick: req.tick, name: req.name, ok: false, error }];
        }
        return [{ kind: 'tool-failed', tick: req.tick, name: req.name, message }];
      }
      return [];
    }
    const told = e.signalExternalWorkflowExecutionInitiatedEventAttributes;
    if (told?.signalName === 'taskEnded') {
      // A halted task hands its output to its agent this way before it closes as cancelled.
      this.handedOver = decode<TaskRunOutput>(told.input)?.result;
      return [];
    }
    if (told?.signalName === 'approvals') {
      const r = decode<ApprovalsReport>(told.input);
      const agentId = agentOfTaskWorkflowId(r?.waiting[0]?.workflowId ?? '');
      return r?.waiting.length && agentId ? [{ kind: 'approval', agentId, waiting: r.waiting }] : [];
    }
    if (e.workflowExecutionSignaledEventAttributes) {
      const sig = e.workflowExecutionSignaledEventAttributes;
      return [{ kind: 'signal', name: sig.signalName ?? '', payload: decode(sig.input) }];
    }
    const state = agentStateOf(e);
    if (state) return [{ kind: 'state', ...state }];
    const closed = closeOf(e);
    if (closed) {
      // What the task returned: its result, its output as a failure's details (FAILED, locked, fatal), or
      // for a halted task what it handed its agent.
      const out =
        closed.status === 'completed'
          ? decode<TaskRunOutput>(e.workflowExecutionCompletedEventAttributes?.result)?.result
          : closed.status === 'failed'
            ? decode<TaskRunOutput>(e.workflowExecutionFailedEventAttributes?.failure?.applicationFailureInfo?.details)
                ?.result
            : closed.status === 'canceled'
              ? this.handedOver
              : undefined;
      return [{ kind: 'end', ...closed, ...(out ? { result: out } : {}) }];
    }
    const next = e.workflowExecutionContinuedAsNewEventAttributes;
    if (next)
      return next.newExecutionRunId
        ? [{ kind: 'continued', runId: next.newExecutionRunId }]
        : [{ kind: 'end', status: 'continued as new' }];
    return [];
  }
}

/**
 * The events of a task workflow as they happen, until it closes or `signal` aborts. With `live: false`,
 * the events recorded so far (for a finished task, all of them).
 *
 * ```ts
 * for await (const e of followTask(client, 'agent-a1-task-3')) print(e);
 * ```
 */
export async function* followTask(
  client: Client,
  workflowId: string,
  opts: { signal?: AbortSignal; live?: boolean; runId?: string } = {},
): AsyncGenerator<TaskEvent> {
  const decoder = new TaskEventDecoder();
  // A task that continued as new is followed from its first run.
  const runId = opts.runId ?? (await currentRun(client, workflowId, opts.signal)).firstRunId;
  const history = followHistory(client, workflowId, {
    from: { runId },
    ...(opts.live !== undefined ? { live: opts.live } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  for await (const { event } of history) {
    for (const te of decoder.decode(event)) {
      yield te;
      if (te.kind === 'end') return;
    }
  }
}
