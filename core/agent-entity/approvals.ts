/**
 * The calls of an agent's running task that wait for a human (docs/ARCHITECTURE.md, human override): the
 * ones the task last reported waiting, and the decisions humans took, newest last, so a second decision
 * for a call is refused by name. Both belong to one run: a new run, its end or a halt forgets them.
 * Plain data in the agent's `AgentData`; the functions change the part they are given.
 */
import type { ApprovalDecision, ApprovalsReport, DecisionInput, PendingApproval } from '../approval';
import { InvalidArgumentError, NotFoundError, RefusedError } from '../errors';
import { validateToolCall } from '../tools';

/** Decisions of the running task the agent remembers (for the 409 of a second one). */
export const KEPT_DECISIONS = 50;

/** The running task's waiting calls and the decisions taken on them. */
export interface ApprovalsData {
  /** Calls of the running task that wait for a human's decision, as the task last reported them. */
  approvals?: PendingApproval[];
  /** The decisions taken for the running task, newest last: a second decision for a call is refused by name. */
  decided?: ApprovalDecision[];
}

/**
 * The task reported its waiting calls (asked, expired, settled): they are listed, but for those decided
 * here already (the task may have reported before the decision reached it). Returns the calls newly
 * waiting, to alert on.
 */
export function listWaiting(d: ApprovalsData, report: ApprovalsReport): PendingApproval[] {
  const before = new Set((d.approvals ?? []).map((p) => p.callId));
  const decided = new Set((d.decided ?? []).map((x) => x.callId));
  const waiting = report.waiting.filter((p) => !decided.has(p.callId));
  d.approvals = waiting.length ? waiting : undefined;
  return waiting.filter((p) => !before.has(p.callId));
}

/** True while some call waits. */
export function anyWaiting(d: ApprovalsData): boolean {
  return !!d.approvals?.length;
}

/**
 * Check a human's decision against what waits: an unknown call is NotFound (404), one decided already
 * Refused (409), one past its expiry Refused, edited arguments that fail the tool's schema
 * InvalidArgument (400). The tool's own schema is checked here for the built-in tools; another tool's by
 * the tool itself when it runs. Returns the waiting call.
 */
export function checkDecision(d: ApprovalsData, agentId: string, input: DecisionInput, nowMs: number): PendingApproval {
  const pending = d.approvals?.find((p) => p.callId === input.callId);
  if (!pending) {
    const done = d.decided?.find((x) => x.callId === input.callId);
    if (done)
      throw new RefusedError(
        `call ${input.callId} of agent ${agentId} was decided already: ${done.decision === 'approve' ? 'approved' : 'denied'} by ${done.by} at ${done.at}`,
      );
    const waiting = (d.approvals ?? []).map((p) => p.callId);
    throw new NotFoundError(
      `no call ${input.callId} of agent ${agentId} waits for approval (${waiting.length ? `waiting: ${waiting.join(', ')}` : 'none waits'}); \`starry approvals ${agentId}\` lists them`,
    );
  }
  // Its task counts it as denied from then on, whatever arrives.
  if (Date.parse(pending.expiresAt) <= nowMs)
    throw new RefusedError(
      `call ${input.callId} of agent ${agentId} expired at ${pending.expiresAt} without a decision: it counts as denied`,
    );
  if (input.args) {
    const checked = validateToolCall({ id: input.callId, name: pending.tool, args: input.args }, [pending.tool]);
    if (!checked.ok)
      throw new InvalidArgumentError(`the edited arguments do not fit ${pending.tool}: ${checked.error.message}`, {
        issues: [`args: ${checked.error.message}`],
      });
  }
  return pending;
}

/** Record a decision (checked already) with who took it and when; its call no longer waits. */
export function recordDecision(d: ApprovalsData, input: DecisionInput, at: string): ApprovalDecision {
  const decision: ApprovalDecision = {
    callId: input.callId,
    decision: input.decision,
    by: input.by ?? 'a human approver',
    at,
    ...(input.reason ? { reason: input.reason } : {}),
    ...(input.note ? { note: input.note } : {}),
    ...(input.args ? { args: input.args } : {}),
  };
  d.decided = [...(d.decided ?? []), decision].slice(-KEPT_DECISIONS);
  const rest = (d.approvals ?? []).filter((p) => p.callId !== input.callId);
  d.approvals = rest.length ? rest : undefined;
  return decision;
}

/** The run ended or was halted: its waiting calls never run, nothing is left to decide. */
export function forgetWaiting(d: ApprovalsData): void {
  d.approvals = undefined;
}

/** A new run starts with nothing waiting and nothing decided. */
export function newRunApprovals(d: ApprovalsData): void {
  d.approvals = undefined;
  d.decided = undefined;
}
