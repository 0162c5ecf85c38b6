/**
 * A turn and its tool steps (seeds: the tool loop, output anomalies, `afterToolExecution`, the
 * frustration intervention): each call of the model's turn is checked, maybe asked about, run or not,
 * and recorded with its result or its pain; the breakers weigh every outcome, and their verdict decides
 * the rest of the turn: alerts wait for its end (after its tool results, frustration first), a lock or a
 * frustration intervention skips its remaining calls. The turn's own state is plain data; it writes the
 * task's books (`TurnBooks`) it is given.
 */
import type { AgentConfig } from '../config';
import { failure, normalizedError, type NormalizedError, type ToolExecutionResult } from '../errors';
import { fingerprint } from '../fingerprint';
import type { Guide, PainContext } from '../guides';
import type { LlmToolCall } from '../llm';
import type { LockVerdict } from '../safety-monitor';
import { breakerEvents, painEvent } from '../telemetry';
import { toolSummary, validateToolCall } from '../tools';
import { frustrationFirst, retryHistory, skippedText, toolResultText } from '../transcript';
import type { Injection, TaskCheckpoint, ToolCallRecord } from '../types';
import type { ApprovalBook } from './approval-book';
import { inject } from './checkpoint';
import type { RunCounters } from './counters';
import { cancelled, failed, suspended } from './ends';
import type { PendingCall, TaskEnd, ToolStep } from './io';
import type { TelemetryBuffer } from './telemetry-buffer';

const HALTED_BEFORE = 'SYSTEM_HALT: stopped by a human before this call started';
const HALTED_WHILE = 'SYSTEM_HALT: cancelled while running';

export interface TurnData {
  tick: number;
  /** The breakers' alerts, in the guide's words: they enter the context when the turn ends. */
  alerts: Array<{ kind: Injection['kind']; text: string }>;
  /** Why the turn's remaining calls are skipped (a halt, a lock, a frustration intervention). */
  skipReason?: string;
  /** The lock a breaker set: the run is suspended when the turn ends. */
  lock?: LockVerdict;
}

/** What a turn's steps write and read besides the turn itself: the task's books and its rules. */
export interface TurnBooks {
  checkpoint: TaskCheckpoint;
  counters: RunCounters;
  telemetry: TelemetryBuffer;
  config: AgentConfig;
  guide: Guide;
  /** The names of the tools offered to the model. */
  offered: readonly string[];
}

export class Turn {
  constructor(readonly data: TurnData = { tick: 0, alerts: [] }) {}

  /** The turn of the model's answer at `tick`. */
  static at(tick: number): Turn {
    return new Turn({ tick, alerts: [] });
  }

  /**
   * Before a tool call (the `index`-th of the turn): skipped when a halt, a lock or a frustration
   * intervention stopped the turn; rejected (recorded as pain) when the call is malformed, or denied
   * (a rule, a human, no decision in time: `E_DENIED` pain); otherwise the workflow runs it, with the
   * approver's edited arguments when they gave some.
   */
  before(
    books: TurnBooks,
    call: LlmToolCall,
    at: { halted: boolean; approvals: ApprovalBook; index?: number },
  ): ToolStep {
    const args = call.rawArguments !== undefined && call.args === undefined ? call.rawArguments : (call.args ?? {});
    const pending: PendingCall = {
      call,
      record: { tick: this.data.tick, name: call.name, args, fingerprint: fingerprint(call.name, args), status: 'ok' },
    };
    if (at.halted) this.data.skipReason = HALTED_BEFORE;
    if (this.data.skipReason) {
      this.skip(books, pending, this.data.skipReason);
      return { run: false };
    }
    const checked = validateToolCall(call, books.offered);
    if (!checked.ok) {
      this.after(books, pending, failure(checked.error));
      return { run: false };
    }
    pending.record.args = checked.args;
    const settled = at.approvals.settle(at.index, pending, books.offered);
    if (settled?.event) books.telemetry.trace(settled.event);
    if (settled && 'refused' in settled) {
      this.after(books, pending, failure(settled.refused));
      return { run: false };
    }
    const runWith = settled ? settled.args : checked.args;
    if (runWith === undefined) return { run: false };
    return { run: true, pending, args: runWith, summary: toolSummary(call.name, runWith) };
  }

  /** A halt cancelled the call while it ran: recorded as skipped; the rest of the turn is skipped too. */
  cancelled(books: TurnBooks, pending: PendingCall): void {
    this.skip(books, pending, HALTED_WHILE);
  }

  /**
   * The tool activity failed for good. Fatal ends the run; a transient error whose retries ran out
   * becomes execution pain carrying the retry history.
   */
  failed(
    books: TurnBooks,
    pending: PendingCall,
    facts: { error: NormalizedError; retriesExhausted: boolean },
  ): TaskEnd | undefined {
    const { error, retriesExhausted } = facts;
    // An execution error fails its activity (red in the Web UI) but is the same pain as one returned as data.
    if (error.kind === 'execution') {
      this.after(books, pending, failure(error));
      return undefined;
    }
    if (error.kind === 'fatal') {
      books.counters.failedWith(error.code);
      books.checkpoint.toolCalls.push({ ...pending.record, status: 'failed', error });
      return failed(error);
    }
    const suggestion = retryHistory(error, books.config.retry, retriesExhausted);
    this.after(books, pending, failure({ ...error, kind: 'execution', suggestion }));
    return undefined;
  }

  /**
   * Record a tool's outcome. `afterToolExecution` runs first, so the pain text sees the counters with
   * this failure in them; its alerts wait for the end of the turn, a lock or a frustration
   * intervention skips the turn's remaining calls.
   */
  after(books: TurnBooks, pending: PendingCall, result: ToolExecutionResult): void {
    const { call, record } = pending;
    const cp = books.checkpoint;
    const verdict = books.counters.afterTool(books.config.safety, {
      toolName: call.name,
      fingerprint: record.fingerprint,
      success: result.success,
    });
    if (result.success && result.message) {
      cp.toolCalls.push(record);
      cp.messages.push(result.message);
    } else {
      const text = result.success ? toolResultText(result.data) : this.pain(books, record, result.error);
      cp.toolCalls.push(record);
      const isError = result.success ? {} : { isError: true as const };
      cp.messages.push({ role: 'tool', callId: call.id, name: call.name, text, ...isError });
    }
    this.weigh(books, verdict, record);
  }

  /**
   * End the turn: its alerts enter the context after the tool results (so every provider's message
   * order stays valid), frustration first; then a lock suspends the run and a halt cancels it.
   */
  end(cp: TaskCheckpoint, halted: boolean): TaskEnd | undefined {
    const { tick, alerts, lock } = this.data;
    for (const a of frustrationFirst(alerts)) inject(cp, tick, a.kind, a.text);
    if (lock) return suspended(lock);
    if (halted) return cancelled();
    return undefined;
  }

  /** A call that did not run: recorded as skipped, its tool result says why. */
  private skip(books: TurnBooks, pending: PendingCall, reason: string): void {
    const { call, record } = pending;
    const error = normalizedError({ code: 'E_SKIPPED', kind: 'execution', source: call.name, message: reason });
    books.checkpoint.toolCalls.push({ ...record, status: 'skipped', error });
    books.checkpoint.messages.push({ role: 'tool', callId: call.id, name: call.name, text: skippedText(reason) });
  }

  /** A failed call's pain: recorded on the call and as an injection, in the guide's words, and for the trace. */
  private pain(books: TurnBooks, record: ToolCallRecord, err: ToolExecutionResult['error']): string {
    const error = err as NormalizedError;
    books.counters.failedWith(error.code);
    record.status = 'failed';
    record.error = error;
    const text = books.guide.interpretPain(error, this.painContext(books, record));
    books.checkpoint.injections.push({ tick: record.tick, kind: 'PAIN', text });
    books.telemetry.record(painEvent(error, books.counters.data.counters.consecutiveFailures, record.tick));
    return text;
  }

  /** The breakers' verdict on a call, for the rest of its turn. */
  private weigh(books: TurnBooks, verdict: ReturnType<RunCounters['afterTool']>, record: ToolCallRecord): void {
    books.telemetry.record(...breakerEvents(books.config.safety, verdict, { counters: verdict.counters }));
    for (const alert of verdict.alerts)
      this.data.alerts.push({
        kind: alert.kind,
        text: books.guide.interpretAlert(alert, this.painContext(books, record)),
      });
    if (verdict.lock) {
      this.data.lock = verdict.lock;
      this.data.skipReason = `${verdict.lock.reason.code}: the agent was locked before this call started`;
    } else if (verdict.skipRest) {
      this.data.skipReason = 'frustration intervention: the rest of this turn was skipped';
    }
  }

  /** What the guide reads about a call that failed or tripped a breaker. */
  private painContext(books: TurnBooks, record: ToolCallRecord): PainContext {
    return {
      tick: record.tick,
      toolName: record.name,
      args: record.args,
      consecutiveFailures: books.counters.data.counters.consecutiveFailures,
      workspace: books.config.workspace,
      tools: books.offered,
    };
  }
}
