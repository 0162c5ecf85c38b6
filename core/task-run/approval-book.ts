/**
 * The approval book of a turn (seeds: human override of tool calls; docs/ARCHITECTURE.md, "Calls that
 * wait for a human"): which of the turn's calls a rule refuses unasked and which wait for a human; the
 * decisions that arrive and the waits that run out; and, when a call's turn comes, whether it runs and
 * with which arguments (the approver's edit, checked like the model's). Plain data, one book a turn.
 */
import {
  approvalVerdict,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  deniedError,
  MAX_WAITING_CALLS,
  type ApprovalDecision,
  type PendingApproval,
} from '../approval';
import { cutStrings } from '../compact';
import type { NormalizedError } from '../errors';
import type { LlmToolCall } from '../llm';
import { approvalDecidedEvent, type TelemetryEvent } from '../telemetry';
import { validateToolCall } from '../tools';
import { callIdOf, type PendingCall, type TaskRunInput } from './io';

/** A call of the turn under an approval rule: refused unasked, or asked (and then decided or expired). */
export type TurnApproval =
  | { verdict: 'deny'; error: NormalizedError }
  | { verdict: 'ask'; pending: PendingApproval; timeoutMs: number; decision?: ApprovalDecision; expired?: boolean };

export interface ApprovalData {
  /** The turn's calls under a rule, by their index in the turn. */
  calls: Record<number, TurnApproval>;
}

/** Whose calls are asked about: the task (its id, the config's rules and the worker's), and the tools it offers. */
export interface AskingRun {
  input: Pick<TaskRunInput, 'taskId' | 'config' | 'workerApproval'>;
  workflowId: string;
  /** The names of the tools offered to the model (a call to another is pain, never asked). */
  offered: readonly string[];
}

/** A call under a rule at its turn: run with these arguments, or refused with this error; and the fact for the trace. */
export type Settled = ({ args: unknown } | { refused: NormalizedError }) & { event?: TelemetryEvent };

export class ApprovalBook {
  constructor(readonly data: ApprovalData = { calls: {} }) {}

  /**
   * Which of the turn's calls wait for a human before any of them runs: returns them, to list at the
   * agent; none, and the turn runs as always. A call a rule denies, or one past `MAX_WAITING_CALLS`, is
   * refused unasked when its turn comes. Without any rule the book stays as it was.
   */
  ask(calls: readonly LlmToolCall[], run: AskingRun, at: { tick: number; nowMs: number }): PendingApproval[] {
    const rules = run.input.config.tools.approval;
    const worker = run.input.workerApproval;
    if (!rules && !worker) return [];
    const timeoutMs = rules?.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    const book: ApprovalData['calls'] = {};
    const asked: PendingApproval[] = [];
    for (const [index, call] of calls.entries()) {
      const checked = validateToolCall(call, run.offered);
      if (!checked.ok) continue; // refused as pain when its turn comes, never asked
      const v = approvalVerdict(rules, worker, call.name, checked.args);
      if (v.verdict === 'run') continue;
      if (v.verdict === 'deny' || asked.length >= MAX_WAITING_CALLS) {
        const why = v.verdict === 'deny' ? v : { overflow: MAX_WAITING_CALLS };
        book[index] = { verdict: 'deny', error: deniedError(call.name, why) };
        continue;
      }
      const pending: PendingApproval = {
        callId: callIdOf(at.tick, index),
        taskId: run.input.taskId,
        workflowId: run.workflowId,
        tool: call.name,
        args: cutStrings(checked.args),
        tick: at.tick,
        rule: v.rule,
        from: v.from,
        askedAt: new Date(at.nowMs).toISOString(),
        expiresAt: new Date(at.nowMs + timeoutMs).toISOString(),
      };
      book[index] = { verdict: 'ask', pending, timeoutMs };
      asked.push(pending);
    }
    this.data.calls = book;
    return asked;
  }

  /** The turn's calls still waiting for a decision. */
  waiting(): PendingApproval[] {
    return Object.values(this.data.calls).flatMap((a) =>
      a.verdict === 'ask' && !a.decision && !a.expired ? [a.pending] : [],
    );
  }

  /** Milliseconds until the first waiting call expires (0: one has). */
  timeLeft(nowMs: number): number {
    const ends = this.waiting().map((p) => Date.parse(p.expiresAt) - nowMs);
    return Math.max(0, Math.min(...ends));
  }

  /** A human's decision. Returns why it was not taken (no such call waits, it expired, it was decided). */
  decide(decision: ApprovalDecision): string | undefined {
    const a = Object.values(this.data.calls).find((x) => x.verdict === 'ask' && x.pending.callId === decision.callId);
    if (!a || a.verdict !== 'ask') return `no call ${decision.callId} waits in this turn`;
    if (a.expired) return `call ${decision.callId} expired before the decision arrived`;
    if (a.decision) return `call ${decision.callId} was decided already`;
    a.decision = decision;
    return undefined;
  }

  /** The waiting calls whose time is up count as denied (`E_DENIED`, "no decision within …"). */
  expire(nowMs: number): void {
    for (const a of Object.values(this.data.calls)) {
      if (a.verdict === 'ask' && !a.decision && Date.parse(a.pending.expiresAt) <= nowMs) a.expired = true;
    }
  }

  /**
   * The `index`-th call of the turn at its turn, its arguments checked: undefined when no rule names it;
   * else the arguments to run it with, or why it is not run (denied, expired, an edit that fails). The
   * call's record says who decided.
   */
  settle(index: number | undefined, pending: PendingCall, offered: readonly string[]): Settled | undefined {
    const approval = index === undefined ? undefined : this.data.calls[index];
    if (!approval) return undefined;
    const { call, record } = pending;
    if (approval.verdict === 'deny') return { refused: approval.error };
    const { decision } = approval;
    const expired = approval.expired || !decision;
    const event = approvalDecidedEvent(
      approval.pending.callId,
      expired ? 'expired' : decision.decision === 'deny' ? 'denied' : 'approved',
    );
    if (expired) {
      record.approval = { decision: 'expired' };
      return { refused: deniedError(call.name, { expiredAfterMs: approval.timeoutMs }), event };
    }
    const who = { by: decision.by, at: decision.at };
    if (decision.decision === 'deny') {
      record.approval = { decision: 'denied', ...who, ...(decision.reason ? { reason: decision.reason } : {}) };
      const why = decision.reason ? { by: decision.by, reason: decision.reason } : who;
      return { refused: deniedError(call.name, why), event };
    }
    record.approval = { decision: 'approved', ...who, ...(decision.note ? { note: decision.note } : {}) };
    if (!decision.args) return { args: record.args, event };
    const edited = validateToolCall({ id: call.id, name: call.name, args: decision.args }, offered);
    if (!edited.ok)
      return {
        refused: { ...edited.error, message: `the approver's edited arguments: ${edited.error.message}` },
        event,
      };
    record.approval.modelArgs = record.args;
    record.args = edited.args;
    return { args: edited.args, event };
  }
}
