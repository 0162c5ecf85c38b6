/**
 * The agent entity's state machine (docs/ARCHITECTURE.md#workflows): inbox, lock state, cumulative budget, carried
 * counters, cancelled and suspended tasks. Pure: the agent workflow holds one and calls it from its
 * handlers; its `data` is plain and is what continue-as-new carries.
 *
 * `AgentEntity` is a facade: each concern is a collaborator in `core/agent-entity/` that owns its part of
 * `AgentData` (the lock, the inbox, the runs, the spend, the limits, the results, the messages, the
 * submits, the approvals, the views); the facade runs the steps that touch several, in order.
 *
 * `WAITING_FOR_EVENT ⇄ EXECUTING ⇄ WAITING_FOR_APPROVAL`, `EXECUTING → SAFETY_LOCKOUT | ERROR_PAUSED | STOPPED`,
 * `any → STOPPED` (halt; a locked agent keeps its state and reason, the halt recorded beside them),
 * `locked → WAITING_FOR_EVENT` (unlock).
 */
import type { ApprovalDecision, ApprovalsReport, DecisionInput, PendingApproval } from './approval';
import type { AgentStatus, LimitsResult, SubmitTaskResult, UnlockResult } from './contract';
import { RefusedError } from './errors';
import type { LimitsChange } from './limits';
import type { HaltInput, HumanMessage, UnlockInput } from './payloads';
import type { TaskRunOutput } from './task-run';
import { isLocked, type Reported, type TaskResult } from './types';
import * as limits from './agent-entity/agent-limits';
import * as approvals from './agent-entity/approvals';
import type { AgentData } from './agent-entity/data';
import * as inbox from './agent-entity/inbox';
import * as lock from './agent-entity/lock';
import * as messages from './agent-entity/messages';
import * as results from './agent-entity/results';
import * as runs from './agent-entity/runs';
import * as submits from './agent-entity/submits';
import * as usage from './agent-entity/usage';
import * as views from './agent-entity/views';
import type { NextRun, ProgressReport } from './agent-entity/runs';
import type { ParsedSubmit } from './agent-entity/submits';

export { RefusedError };
export { newAgentData, type AgentData } from './agent-entity/data';
export type { HaltRecord } from './agent-entity/lock';
export { KEEP_RECENT } from './agent-entity/results';
export type { NextRun, RunningTask, SuspendedTask } from './agent-entity/runs';
export type { ParsedSubmit } from './agent-entity/submits';
export { reportedOf } from './agent-entity/views';
export type { CancelledTask, LimitsRecord, UnlockRecord } from './contract';
export type { HumanMessage } from './payloads';
export type { Reported };

/**
 * The agent's rules, over plain data.
 *
 * ```ts
 * const agent = new AgentEntity(newAgentData('a1', config));
 * agent.validateSubmit({ goal: 'x' }); // throws RefusedError while locked
 * const { taskId } = agent.submit({ goal: 'x' });
 * ```
 */
export class AgentEntity {
  constructor(
    public data: AgentData,
    private readonly workflowIdOf: (taskId: string) => string,
  ) {}

  get locked(): boolean {
    return isLocked(this.data.agentState);
  }

  /**
   * True while the agent holds nothing: no task was accepted (queued, running, suspended, finished or
   * cancelled), no message or unlock came. An agent started by a submit that was refused ends while it
   * is empty, so a refusal leaves no agent behind.
   */
  get empty(): boolean {
    const d = this.data;
    return (
      !d.current &&
      !d.suspended &&
      !d.inbox.items.length &&
      !d.tasks.length &&
      !d.cancelledTasks.length &&
      !d.pendingMessages.length &&
      !d.unlocks.length
    );
  }

  /**
   * The one parse of a `submitTask` payload, shared by the update's validator and its handler (Temporal
   * runs no validator on replay, so the handler parses what the history holds); a config that names no
   * `llm` takes the agent's. Pure: the same payload and agent give the same answer.
   *
   * @throws InvalidArgumentError (a ConfigError for the config) naming every invalid field.
   */
  parseSubmit(raw: unknown): ParsedSubmit {
    return submits.parseSubmit(raw, this.data.config?.llm);
  }

  /**
   * Why the agent refuses a parsed submit now (its state, its queue, its size, a config that loosens its
   * limits), or nothing; given the time `now` (the validator's), also one that came after its `acceptBy`.
   *
   * @throws RefusedError; PermissionDeniedError for looser limits; ConfigError for a first task's limits that do not fit.
   */
  validateSubmit(input: ParsedSubmit, updateId?: string, now?: number): void {
    if (this.answered(updateId)) return;
    const d = this.data;
    if (now !== undefined) submits.refuseLate(d.agentId, input, now);
    lock.refuseWhileLocked(d, d.agentId);
    limits.refuseTaskConfig(d, d.agentId, input.config);
    inbox.refuseFullInbox(d, d.agentId);
    submits.refuseOversize(d.agentId, d, input);
    if (input.taskId !== undefined && this.knows(input.taskId))
      throw new RefusedError(`task id ${input.taskId} is already used by agent ${d.agentId}`);
    inbox.checkPriority(input);
  }

  private knows(taskId: string): boolean {
    const d = this.data;
    return inbox.isQueued(d, taskId) || runs.holdsRun(d, taskId) || d.tasks.some((t) => t.taskId === taskId);
  }

  /** The answer already given to this submit update, when Temporal delivers it again. */
  answered(updateId: string | undefined): SubmitTaskResult | undefined {
    return submits.answeredSubmit(this.data, updateId);
  }

  /**
   * Queue a parsed submit, checked against the agent's state at this moment (a validator's answer may
   * be stale by the time its handler runs).
   *
   * @throws RefusedError when the agent refuses it now.
   */
  submit(input: ParsedSubmit, updateId?: string): SubmitTaskResult {
    const again = this.answered(updateId);
    if (again) return again;
    this.validateSubmit(input);
    const d = this.data;
    limits.adoptFirstConfig(d, input.config);
    const taskId = inbox.taskIdFor(d, input.taskId, (id) => this.knows(id));
    const queued = inbox.queueTask(d, taskId, input);
    results.uncancel(d, taskId);
    const result = { taskId, workflowId: this.workflowIdOf(taskId), position: queued + (d.current ? 1 : 0) };
    submits.rememberSubmit(d, updateId, result);
    return result;
  }

  /** True when the loop has something to start. */
  hasWork(): boolean {
    return runs.canStart(this.data, this.locked, this.data.inbox.items.length);
  }

  /** Take the next run and enter EXECUTING. A suspended task blocks the inbox until unlock decides it. */
  startNext(): NextRun | undefined {
    if (!this.hasWork()) return undefined;
    const d = this.data;
    let next = runs.takeResume(d);
    if (!next) {
      const task = inbox.takeQueued(d);
      if (!task) return undefined;
      next = { task, workflowId: this.workflowIdOf(task.taskId) };
    }
    const config = limits.configForRun(d, d.agentId, next.task.taskId, next.task.config);
    runs.startRun(d, next);
    approvals.newRunApprovals(d);
    lock.enterExecuting(d);
    return { ...next, config };
  }

  /** Human messages waiting for the next task. */
  takePendingMessages(): HumanMessage[] {
    return messages.takePending(this.data);
  }

  /** The running task's progress report; one of another task is ignored. */
  progress(p: ProgressReport): void {
    if (runs.progressRun(this.data, p)) usage.progressUsage(this.data, p);
  }

  /** A run ended: account for it, and lock when a breaker (or a fatal error) says so. */
  finish(out: TaskRunOutput): TaskResult {
    const d = this.data;
    const running = runs.endRun(d);
    approvals.forgetWaiting(d);
    usage.accountRun(d, out);
    // A human message is never dropped: what the task did not show its LLM goes to the next run.
    messages.keepUndelivered(d, out.undelivered);
    lock.lockAfterRun(d, out.lock);
    if (out.result.outcome === 'SUSPENDED' && out.checkpoint && running) runs.suspendRun(d, running, out.checkpoint);
    const result: TaskResult = { ...out.result, agentState: d.agentState };
    results.recordResult(d, result);
    return result;
  }

  /**
   * SYSTEM_HALT, priority 0: STOPPED at once, the inbox cleared into `cancelledTasks`. An agent locked
   * already keeps its state and first reason, the halt recorded beside them (`halt`). Returns the
   * running task's workflow id, which the workflow forwards the halt to.
   */
  halt(input: HaltInput = {}): { forwardTo?: string; cleared: number } {
    const d = this.data;
    const by = input.by ?? 'a human operator';
    lock.haltLock(d, by, input.note);
    runs.forgetResume(d);
    // The running task ends CANCELED and its waiting calls never run: nothing is left to decide.
    approvals.forgetWaiting(d);
    const cleared = inbox.clearInbox(d);
    results.cancelCleared(d, cleared, by);
    return { forwardTo: d.current?.workflowId, cleared: cleared.length };
  }

  /** Why a human message is refused (too many for the running task, or waiting), or nothing. */
  validateMessage(): void {
    messages.refuseMessage(this.data, this.data.agentId, this.data.current);
  }

  /** A human message: to the running task, or kept for the next one. Returns where to forward it. */
  message(m: HumanMessage): { forwardTo?: string } {
    this.validateMessage();
    return messages.takeMessage(this.data, this.data.current, m);
  }

  /** A message that could not be forwarded (the task had just closed): keep it for the next run. */
  keepMessage(m: HumanMessage): void {
    messages.keepMessage(this.data, m);
  }

  /**
   * The running task's waiting calls changed (asked, expired, settled): the agent lists them and is
   * WAITING_FOR_APPROVAL while any waits. A call decided here already is not listed again (the task
   * may have reported before the decision reached it). Returns the calls newly waiting, to alert on.
   */
  approvalsReported(report: ApprovalsReport): PendingApproval[] {
    const d = this.data;
    if (!d.current || d.current.task.taskId !== report.taskId || this.locked) return [];
    const asked = approvals.listWaiting(d, report);
    lock.settleWaiting(d, approvals.anyWaiting(d));
    return asked;
  }

  /**
   * Check a human's decision against what waits: an unknown call is NotFound (404), one decided already
   * Refused (409), edited arguments that fail the tool's schema InvalidArgument (400).
   */
  validateDecision(input: DecisionInput, nowMs: number): PendingApproval {
    return approvals.checkDecision(this.data, this.data.agentId, input, nowMs);
  }

  /** Take a decision (checked again: another may have won the race): the task hears it from the workflow. */
  decide(input: DecisionInput, at: string): { decision: ApprovalDecision; forwardTo: string } {
    const pending = this.validateDecision(input, Date.parse(at));
    const decision = approvals.recordDecision(this.data, input, at);
    lock.settleWaiting(this.data, approvals.anyWaiting(this.data));
    return { decision, forwardTo: pending.workflowId };
  }

  /** `admin:unlock`: leave any locked state; resume or abort the suspended task. */
  unlock(input: UnlockInput = {}): UnlockResult {
    const d = this.data;
    if (!this.locked) return lock.notLocked(d, d.agentId);
    const { from, reason } = lock.releaseLock(d, input);
    const added = input.addTokens ?? 0;
    limits.addTokens(d, added);
    usage.resetCounters(d);
    const notes: string[] = [`agent ${d.agentId} unlocked from ${from}${reason ? ` (${reason.code})` : ''}`];
    const decided = runs.decideSuspended(d, !!input.resume);
    if (decided && !decided.resumed) results.abortResult(d, decided.taskId, d.agentState);
    if (decided) notes.push(decided.note);
    notes.push(...usage.stillSpent(d, d.agentId, reason, added, d.config?.safety));
    return { unlocked: true, agentState: d.agentState, message: notes.join('; ') };
  }

  /**
   * Why an admin's change of the agent's limits is refused now (no limits yet, a change that does not
   * fit), or nothing.
   *
   * @throws RefusedError before the agent has a config; ConfigError for limits that do not fit.
   */
  validateLimits(input: LimitsChange): void {
    limits.refuseLimitsChange(this.data, this.data.agentId, input);
  }

  /**
   * `admin:limits`: an admin sets some of the agent's limits (raising or lowering them), recorded with who
   * did it. A running task keeps the limits it started with; the next one runs with these.
   */
  setLimits(input: LimitsChange): LimitsResult {
    return limits.setAgentLimits(this.data, this.data.agentId, input, this.data.current?.task.taskId);
  }

  /** What the agent's search attributes say (`reportedOf`). */
  reported(): Reported {
    return views.reportedOf(this.data);
  }

  /** What a task about to start reports (`TaskRun.reported`), given as its search attributes at its start. */
  taskStartReported(next: NextRun): Reported {
    return views.taskStartReportedOf(this.data.agentId, next);
  }

  /** The agent's `state` query (`AgentStatus`). */
  status(): AgentStatus {
    return views.statusOf(this.data);
  }

  /** The Web UI's current details of the agent (markdown): its state and why, first, then what it holds. */
  details(): string {
    return views.detailsOf(this.data);
  }
}
