/**
 * The agent entity's state machine (docs/ARCHITECTURE.md#workflows): inbox, lock state, cumulative budget, carried
 * counters, cancelled and suspended tasks. Pure: the agent workflow holds one and calls it from its
 * handlers; its `data` is plain and is what continue-as-new carries.
 *
 * `WAITING_FOR_EVENT ⇄ EXECUTING ⇄ WAITING_FOR_APPROVAL`, `EXECUTING → SAFETY_LOCKOUT | ERROR_PAUSED | STOPPED`,
 * `any → STOPPED` (halt; a locked agent keeps its state and reason, the halt recorded beside them),
 * `locked → WAITING_FOR_EVENT` (unlock).
 */
import {
  approvalLine,
  mergeApprovalRules,
  ruleText,
  type ApprovalRule,
  type ApprovalDecision,
  type ApprovalsReport,
  type DecisionInput,
  type PendingApproval,
} from './approval';
import { parseTaskConfig, type AgentConfig } from './config';
import {
  changeLimits,
  firstLimits,
  LIMIT_FIELDS,
  refuseLooserLimits,
  runLimits,
  type LimitField,
  type LimitsChange,
} from './limits';
import { formatLlmSpec } from './llm-spec';
import { roundUsd } from './pricing';
import {
  clear,
  dequeue,
  DEFAULT_TASK_PRIORITY,
  emptyInbox,
  enqueue,
  ordered,
  type PriorityInbox,
  type QueuedTask,
} from './priority-inbox';
import { initialCounters, type SafetyCounters } from './safety-monitor';
import type {
  AgentStatus,
  CancelledTask,
  LimitsRecord,
  LimitsResult,
  SubmitTaskResult,
  UnlockRecord,
  UnlockResult,
} from './contract';
import {
  LIMITS,
  parsePayload,
  SUBMIT_EXPIRED,
  submitTaskInputSchema,
  type HaltInput,
  type HumanMessage,
  type SubmitTaskInput,
  type UnlockInput,
} from './payloads';
import { InvalidArgumentError, NotFoundError, RefusedError } from './errors';
import { fitResult, jsonBytes } from './compact';
import type { TaskRunOutput } from './task-run';
import { validateToolCall } from './tools';
import {
  isLocked,
  reasonText,
  type AgentState,
  type LockReason,
  type Reported,
  type TaskCheckpoint,
  type TaskResult,
} from './types';

export { RefusedError };

/** Results and unlock records kept in state (the newest); older ones live in the task workflows' histories. */
export const KEEP_RECENT = LIMITS.keptResults;

export type { CancelledTask, HumanMessage, LimitsRecord, UnlockRecord };

export interface RunningTask {
  task: QueuedTask;
  workflowId: string;
  tick: number;
  /** Tokens this run has used so far (from the task's progress reports). */
  runTokens: number;
  /** Its cached input tokens and cost so far, likewise (when there are some). */
  runCachedInputTokens?: number;
  runCostUsd?: number;
  /** Human messages forwarded to this run (bounded by LIMITS.messagesPerRun). */
  messages?: number;
  /** The task's trace id, from its progress reports when its worker traces. */
  traceId?: string;
}

export interface SuspendedTask {
  task: QueuedTask;
  workflowId: string;
  checkpoint: TaskCheckpoint;
}

/** Everything the agent carries across tasks and continue-as-new. */
export interface AgentData {
  agentId: string;
  /**
   * The agent's config: its first task's, when it was started without one; each task's own replaces it,
   * but for its limits (`safety`), which only an admin changes (core/limits.ts).
   */
  config?: AgentConfig;
  agentState: AgentState;
  reason?: LockReason;
  /** A SYSTEM_HALT that reached the agent while it was locked already: `reason` stays the first lock's. */
  halt?: HaltRecord;
  tokensUsed: number;
  /** Of the input tokens in `tokensUsed`, those read from the provider's cache (absent while none were). */
  cachedInputTokens?: number;
  /** What the agent's LLM calls cost in USD, by the prices its tasks had (absent while none had one). */
  costUsd?: number;
  inbox: PriorityInbox;
  counters: SafetyCounters;
  lastErrorCode?: string;
  nextTaskNumber: number;
  current?: RunningTask;
  suspended?: SuspendedTask;
  resumeRequested: boolean;
  cancelledTasks: CancelledTask[];
  tasks: TaskResult[];
  unlocks: UnlockRecord[];
  pendingMessages: HumanMessage[];
  /**
   * Tokens humans added with `unlock --add-tokens` since the budget was last set (by the first config or
   * `admin:limits`): in the agent's budget, and added to a task's own `tokenBudget` too, so they stay added.
   */
  addedTokens?: number;
  /** Admins' changes of the agent's limits (`admin:limits`), the newest. */
  limitChanges?: LimitsRecord[];
  /**
   * The answers to the latest submits, by update id. Temporal may deliver an update again to the run
   * after a continue-as-new (temporalio/temporal#6375): the same update gets the same answer, once.
   */
  submits?: { updateId: string; result: SubmitTaskResult }[];
  /** Calls of the running task that wait for a human's decision, as the task last reported them. */
  approvals?: PendingApproval[];
  /** The decisions taken for the running task, newest last: a second decision for a call is refused by name. */
  decided?: ApprovalDecision[];
}

/** Decisions of the running task the agent remembers (for the 409 of a second one). */
const KEPT_DECISIONS = 50;

/** A `submitTask` payload after checking: its config complete. */
export type ParsedSubmit = SubmitTaskInput;

/** Who halted an agent that was locked already, and why. */
export interface HaltRecord {
  by: string;
  note?: string;
}

export type { Reported };

/** What to start next: a queued task, or a suspended one to resume, and the config it runs with. */
export interface NextRun {
  task: QueuedTask;
  workflowId: string;
  config: AgentConfig;
  checkpoint?: TaskCheckpoint;
}

export function newAgentData(agentId: string, config?: AgentConfig): AgentData {
  return {
    agentId,
    ...(config ? { config } : {}),
    agentState: 'WAITING_FOR_EVENT',
    tokensUsed: 0,
    inbox: emptyInbox(),
    counters: initialCounters(),
    nextTaskNumber: 1,
    resumeRequested: false,
    cancelledTasks: [],
    tasks: [],
    unlocks: [],
    pendingMessages: [],
  };
}

/**
 * What an agent reports as its search attributes (`AgentEntity.reported`); a new agent's are what the
 * client starts it with.
 *
 * ```ts
 * reportedOf(newAgentData('a1')) // { agentId: 'a1', agentState: 'WAITING_FOR_EVENT', tick: 0, tokensUsed: 0, lockReason: null }
 * ```
 */
export function reportedOf(d: AgentData): Reported {
  return {
    agentId: d.agentId,
    agentState: d.agentState,
    tick: d.current?.tick ?? d.tasks.at(-1)?.ticks ?? 0,
    tokensUsed: d.tokensUsed + (d.current?.runTokens ?? 0),
    ...(d.lastErrorCode ? { lastErrorCode: d.lastErrorCode } : {}),
    lockReason: d.reason?.code ?? null,
  };
}

const keepRecent = <T>(items: T[]): T[] => items.slice(-KEEP_RECENT);

const withAddedTokens = (config: AgentConfig, tokens: number): AgentConfig =>
  tokens > 0 ? { ...config, safety: { ...config.safety, tokenBudget: config.safety.tokenBudget + tokens } } : config;

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
   * runs no validator on replay, so the handler parses what the history holds): the contract's schema,
   * and the config's (the edge sends it parsed, which parses to itself; a config that names no `llm`
   * takes the agent's; of `safety` it keeps the limits it gives). Pure: the same payload and agent give
   * the same answer.
   *
   * @throws InvalidArgumentError (a ConfigError for the config) naming every invalid field.
   */
  parseSubmit(raw: unknown): ParsedSubmit {
    const input = parsePayload(submitTaskInputSchema(), raw, 'submitTask');
    const out: ParsedSubmit = { goal: input.goal };
    if (input.priority !== undefined) out.priority = input.priority;
    if (input.taskId !== undefined) out.taskId = input.taskId;
    if (input.acceptBy !== undefined) out.acceptBy = input.acceptBy;
    if (input.traceparent !== undefined) out.traceparent = input.traceparent;
    if (input.config !== undefined) out.config = parseTaskConfig(input.config, this.data.config?.llm, 'task config');
    return out;
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
    if (now !== undefined && input.acceptBy !== undefined && now > input.acceptBy) {
      throw new RefusedError(
        `the submit reached agent ${d.agentId} at ${new Date(now).toISOString()}, after ${new Date(input.acceptBy).toISOString()}, when its client stopped waiting for a worker: it is not run. Submit it again (the same Idempotency-Key or task id is safe); if this keeps happening, the client's clock may be behind the server's`,
        { issues: [SUBMIT_EXPIRED] },
      );
    }
    if (this.locked) {
      const why = d.reason ? ` (${reasonText(d.reason)})` : '';
      throw new RefusedError(
        `agent ${d.agentId} is ${d.agentState}${why} and refuses tasks until a human unlocks it: starry unlock ${d.agentId}`,
      );
    }
    if (!d.config && !input.config)
      throw new RefusedError(`agent ${d.agentId} has no config yet: submit its first task with one (it names the LLM)`);
    // Only an admin loosens an agent's limits; its first task sets them.
    if (input.config && d.config) refuseLooserLimits(d.agentId, this.limitsBeforeAdded(), input.config.safety);
    else if (input.config) firstLimits(input.config.safety);
    if (d.inbox.items.length >= LIMITS.queuedTasks) {
      throw new RefusedError(
        `agent ${d.agentId} already has ${d.inbox.items.length} tasks queued (the most it takes): submit again when some have run`,
      );
    }
    // Everything the agent carries goes through continue-as-new as one payload: keep it well inside 2 MB.
    const bytes = jsonBytes(d) + jsonBytes(input);
    if (bytes > LIMITS.agentStateBytes) {
      throw new RefusedError(
        `agent ${d.agentId} would carry ${Math.ceil(bytes / 1000)} KB of queued, cancelled and recent tasks, more than the ${LIMITS.agentStateBytes / 1000} KB it keeps (Temporal's payload limit is 2 MB): submit again when some have run, or with a shorter goal`,
      );
    }
    if (input.taskId !== undefined && this.knows(input.taskId))
      throw new RefusedError(`task id ${input.taskId} is already used by agent ${d.agentId}`);
    // Throws a RangeError naming the bad priority; nothing is changed.
    enqueue(emptyInbox(), { taskId: 'check', goal: input.goal, priority: input.priority ?? DEFAULT_TASK_PRIORITY });
  }

  private knows(taskId: string): boolean {
    const d = this.data;
    return (
      d.inbox.items.some((t) => t.taskId === taskId) ||
      d.current?.task.taskId === taskId ||
      d.suspended?.task.taskId === taskId ||
      d.tasks.some((t) => t.taskId === taskId)
    );
  }

  /** The answer already given to this submit update, when Temporal delivers it again. */
  answered(updateId: string | undefined): SubmitTaskResult | undefined {
    return updateId === undefined ? undefined : this.data.submits?.find((s) => s.updateId === updateId)?.result;
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
    // An agent started without a config takes its first task's, its limits the defaults with the task's.
    if (!d.config && input.config)
      d.config = withAddedTokens({ ...input.config, safety: firstLimits(input.config.safety) }, d.addedTokens ?? 0);
    let taskId = input.taskId;
    // The agent's own numbering skips ids a caller chose, so two tasks never share a workflow id.
    while (taskId === undefined || (input.taskId === undefined && this.knows(taskId)))
      taskId = `task-${d.nextTaskNumber++}`;
    const task: Omit<QueuedTask, 'seq'> = {
      taskId,
      goal: input.goal,
      priority: input.priority ?? DEFAULT_TASK_PRIORITY,
    };
    if (input.config) task.config = input.config;
    if (input.traceparent) task.traceparent = input.traceparent;
    d.inbox = enqueue(d.inbox, task);
    // A cancelled task submitted again under its id is no longer cancelled.
    d.cancelledTasks = d.cancelledTasks.filter((c) => c.taskId !== taskId);
    const position = ordered(d.inbox).findIndex((t) => t.taskId === taskId) + (d.current ? 1 : 0);
    const result = { taskId, workflowId: this.workflowIdOf(taskId), position };
    if (updateId !== undefined)
      d.submits = [...(d.submits ?? []), { updateId, result }].slice(-LIMITS.rememberedSubmits);
    return result;
  }

  /** True when the loop has something to start. */
  hasWork(): boolean {
    const d = this.data;
    if (d.current || this.locked) return false;
    return (d.resumeRequested && !!d.suspended) || (!d.suspended && d.inbox.items.length > 0);
  }

  /** Take the next run and enter EXECUTING. A suspended task blocks the inbox until unlock decides it. */
  startNext(): NextRun | undefined {
    if (!this.hasWork()) return undefined;
    const d = this.data;
    let next: Omit<NextRun, 'config'>;
    if (d.resumeRequested && d.suspended) {
      next = { task: d.suspended.task, workflowId: d.suspended.workflowId, checkpoint: d.suspended.checkpoint };
      d.suspended = undefined;
      d.resumeRequested = false;
    } else {
      const { task, inbox } = dequeue(d.inbox);
      if (!task) return undefined;
      d.inbox = inbox;
      next = { task, workflowId: this.workflowIdOf(task.taskId) };
    }
    // A task's own config replaces the agent's but for its limits, which stay the agent's (tokens a human
    // added included); the task runs with the tighter of its own and the agent's, field by field.
    // Its approval rules likewise: the agent's stay, and a task's own can only add to them for its run.
    const own = next.task.config;
    if (own) {
      const rules = d.config ? d.config.tools.approval : own.tools.approval;
      const { approval: _asked, ...tools } = own.tools;
      d.config = {
        ...own,
        safety: d.config?.safety ?? firstLimits(own.safety),
        tools: rules ? { ...tools, approval: rules } : tools,
      };
    }
    // Never without one: a submit is refused while neither the agent nor the task has a config.
    if (!d.config) throw new Error(`agent ${d.agentId} has no config for task ${next.task.taskId}`);
    d.current = { task: next.task, workflowId: next.workflowId, tick: next.checkpoint?.ticks ?? 0, runTokens: 0 };
    d.approvals = undefined;
    d.decided = undefined;
    d.agentState = 'EXECUTING';
    d.reason = undefined;
    const asked = own?.safety ?? {};
    const added = d.addedTokens ?? 0;
    const safety = runLimits(
      d.config.safety,
      asked.tokenBudget !== undefined && added > 0 ? { ...asked, tokenBudget: asked.tokenBudget + added } : asked,
    );
    const approval = mergeApprovalRules(d.config.tools.approval, own?.tools.approval);
    return {
      ...next,
      config: { ...d.config, safety, tools: { ...d.config.tools, ...(approval ? { approval } : {}) } },
    };
  }

  /** The agent's limits as a task's config counts them: its budget without the tokens humans added since it was set. */
  private limitsBeforeAdded(): AgentConfig['safety'] {
    const safety = this.data.config!.safety;
    return { ...safety, tokenBudget: safety.tokenBudget - (this.data.addedTokens ?? 0) };
  }

  /** Human messages waiting for the next task. */
  takePendingMessages(): HumanMessage[] {
    return this.data.pendingMessages.splice(0);
  }

  progress(p: {
    taskId: string;
    tick: number;
    runTokens: number;
    runCachedInputTokens?: number;
    runCostUsd?: number;
    counters: SafetyCounters;
    lastErrorCode?: string;
    traceId?: string;
  }): void {
    const c = this.data.current;
    if (!c || c.task.taskId !== p.taskId) return;
    c.tick = p.tick;
    c.runTokens = p.runTokens;
    if (p.runCachedInputTokens !== undefined) c.runCachedInputTokens = p.runCachedInputTokens;
    if (p.runCostUsd !== undefined) c.runCostUsd = p.runCostUsd;
    if (p.traceId) c.traceId = p.traceId;
    this.data.counters = p.counters;
    if (p.lastErrorCode) this.data.lastErrorCode = p.lastErrorCode;
  }

  /** A run ended: account for it, and lock when a breaker (or a fatal error) says so. */
  finish(out: TaskRunOutput): TaskResult {
    const d = this.data;
    const running = d.current;
    d.current = undefined;
    d.approvals = undefined;
    if (d.agentState === 'WAITING_FOR_APPROVAL') d.agentState = 'EXECUTING';
    d.tokensUsed += out.runTokens;
    if (out.runCachedInputTokens) d.cachedInputTokens = (d.cachedInputTokens ?? 0) + out.runCachedInputTokens;
    if (out.runCostUsd !== undefined) d.costUsd = roundUsd((d.costUsd ?? 0) + out.runCostUsd);
    d.counters = out.counters;
    // A human message is never dropped: what the task did not show its LLM goes to the next run.
    if (out.undelivered?.length) d.pendingMessages = [...out.undelivered, ...d.pendingMessages];
    const lastCall = out.result.toolCalls.at(-1);
    if (lastCall?.error) d.lastErrorCode = lastCall.error.code;
    if (out.lock && d.agentState !== 'STOPPED') {
      d.agentState = out.lock.agentState;
      d.reason = out.lock.reason;
    } else if (d.agentState === 'EXECUTING') {
      d.agentState = 'WAITING_FOR_EVENT';
    }
    if (out.result.outcome === 'SUSPENDED' && out.checkpoint && running) {
      d.suspended = { task: running.task, workflowId: running.workflowId, checkpoint: out.checkpoint };
    }
    const result: TaskResult = { ...out.result, agentState: d.agentState };
    this.record(result);
    return result;
  }

  private record(result: TaskResult): void {
    const d = this.data;
    // Kept compact: the full transcript lives in the task workflow's own result and history.
    d.tasks = keepRecent([
      ...d.tasks.filter((t) => t.taskId !== result.taskId),
      fitResult(result, LIMITS.keptResultBytes),
    ]);
  }

  /**
   * SYSTEM_HALT, priority 0: STOPPED at once, the inbox cleared into `cancelledTasks`. An agent locked
   * already keeps its state and first reason, the halt recorded beside them (`halt`). Returns the
   * running task's workflow id, which the workflow forwards the halt to.
   */
  halt(input: HaltInput = {}): { forwardTo?: string; cleared: number } {
    const d = this.data;
    const by = input.by ?? 'a human operator';
    if (this.locked) {
      // Locked already: the first reason is what a human must read before unlocking, so it stays.
      d.halt = { by, ...(input.note ? { note: input.note } : {}) };
    } else {
      d.agentState = 'STOPPED';
      d.reason = { code: 'SYSTEM_HALT', message: `SYSTEM_HALT by ${by}${input.note ? `: ${input.note}` : ''}` };
    }
    d.resumeRequested = false;
    // The running task ends CANCELED and its waiting calls never run: nothing is left to decide.
    d.approvals = undefined;
    const { cleared, inbox } = clear(d.inbox);
    d.inbox = inbox;
    const reason = `cancelled by SYSTEM_HALT (${by}) before it started; resubmit it to run it`;
    const records = cleared.map((t): CancelledTask => ({
      taskId: t.taskId,
      goal: t.goal,
      priority: t.priority,
      reason,
      ...(t.config ? { config: t.config } : {}),
    }));
    d.cancelledTasks = [...d.cancelledTasks, ...records].slice(-LIMITS.cancelledTasks);
    return { forwardTo: d.current?.workflowId, cleared: cleared.length };
  }

  /** Why a human message is refused (too many for the running task, or waiting), or nothing. */
  validateMessage(): void {
    const d = this.data;
    if (d.current && (d.current.messages ?? 0) >= LIMITS.messagesPerRun) {
      throw new RefusedError(
        `task ${d.current.task.taskId} has already received ${LIMITS.messagesPerRun} messages, the most one run takes: wait for it to end, or halt it`,
      );
    }
    if (!d.current && d.pendingMessages.length >= LIMITS.pendingMessages) {
      throw new RefusedError(
        `agent ${d.agentId} already holds ${d.pendingMessages.length} messages for its next task, the most it keeps: submit a task first`,
      );
    }
  }

  /** A human message: to the running task, or kept for the next one. Returns where to forward it. */
  message(m: HumanMessage): { forwardTo?: string } {
    this.validateMessage();
    const current = this.data.current;
    if (current) {
      current.messages = (current.messages ?? 0) + 1;
      return { forwardTo: current.workflowId };
    }
    this.data.pendingMessages.push(m);
    return {};
  }

  /** A message that could not be forwarded (the task had just closed): keep it for the next run. */
  keepMessage(m: HumanMessage): void {
    this.data.pendingMessages.push(m);
  }

  /**
   * The running task's waiting calls changed (asked, expired, settled): the agent lists them and is
   * WAITING_FOR_APPROVAL while any waits. A call decided here already is not listed again (the task
   * may have reported before the decision reached it). Returns the calls newly waiting, to alert on.
   */
  approvalsReported(report: ApprovalsReport): PendingApproval[] {
    const d = this.data;
    if (!d.current || d.current.task.taskId !== report.taskId || this.locked) return [];
    const before = new Set((d.approvals ?? []).map((p) => p.callId));
    const decided = new Set((d.decided ?? []).map((x) => x.callId));
    const waiting = report.waiting.filter((p) => !decided.has(p.callId));
    d.approvals = waiting.length ? waiting : undefined;
    this.settleState();
    return waiting.filter((p) => !before.has(p.callId));
  }

  /**
   * Check a human's decision against what waits: an unknown call is NotFound (404), one decided already
   * Refused (409), edited arguments that fail the tool's schema InvalidArgument (400). The tool's own
   * schema is checked here for the built-in tools; another tool's by the tool itself when it runs.
   */
  validateDecision(input: DecisionInput, nowMs: number): PendingApproval {
    const d = this.data;
    const pending = d.approvals?.find((p) => p.callId === input.callId);
    if (!pending) {
      const done = d.decided?.find((x) => x.callId === input.callId);
      if (done)
        throw new RefusedError(
          `call ${input.callId} of agent ${d.agentId} was decided already: ${done.decision === 'approve' ? 'approved' : 'denied'} by ${done.by} at ${done.at}`,
        );
      const waiting = (d.approvals ?? []).map((p) => p.callId);
      throw new NotFoundError(
        `no call ${input.callId} of agent ${d.agentId} waits for approval (${waiting.length ? `waiting: ${waiting.join(', ')}` : 'none waits'}); \`starry approvals ${d.agentId}\` lists them`,
      );
    }
    // Its task counts it as denied from then on, whatever arrives.
    if (Date.parse(pending.expiresAt) <= nowMs)
      throw new RefusedError(
        `call ${input.callId} of agent ${d.agentId} expired at ${pending.expiresAt} without a decision: it counts as denied`,
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

  /** Take a decision (checked again: another may have won the race): the task hears it from the workflow. */
  decide(input: DecisionInput, at: string): { decision: ApprovalDecision; forwardTo: string } {
    const pending = this.validateDecision(input, Date.parse(at));
    const d = this.data;
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
    this.settleState();
    return { decision, forwardTo: pending.workflowId };
  }

  /** EXECUTING ⇄ WAITING_FOR_APPROVAL, as calls start and stop waiting. */
  private settleState(): void {
    const d = this.data;
    if (d.approvals?.length && d.agentState === 'EXECUTING') d.agentState = 'WAITING_FOR_APPROVAL';
    else if (!d.approvals?.length && d.agentState === 'WAITING_FOR_APPROVAL') d.agentState = 'EXECUTING';
  }

  /** `admin:unlock`: leave any locked state; resume or abort the suspended task. */
  unlock(input: UnlockInput = {}): UnlockResult {
    const d = this.data;
    if (!this.locked) {
      return {
        unlocked: false,
        agentState: d.agentState,
        message: `agent ${d.agentId} is not locked (${d.agentState}): nothing to unlock`,
      };
    }
    const addTokens = input.addTokens ?? 0;
    if (!Number.isInteger(addTokens) || addTokens < 0)
      throw new RangeError(`addTokens must be a whole number >= 0, got ${addTokens}`);
    const from = d.agentState;
    const reason = d.reason;
    const record: UnlockRecord = { by: input.by ?? 'a human operator', from, resume: !!input.resume, addTokens };
    if (input.note) record.note = input.note;
    if (reason) record.reason = reason;
    d.unlocks = keepRecent([...d.unlocks, record]);

    if (addTokens > 0) {
      d.addedTokens = (d.addedTokens ?? 0) + addTokens;
      if (d.config) d.config = withAddedTokens(d.config, addTokens);
    }
    // A fresh start, window included, so the failures that locked the agent do not lock it again.
    d.counters = initialCounters();
    d.agentState = 'WAITING_FOR_EVENT';
    d.reason = undefined;
    d.halt = undefined;

    const notes: string[] = [`agent ${d.agentId} unlocked from ${from}${reason ? ` (${reason.code})` : ''}`];
    if (d.suspended) {
      if (input.resume) {
        d.resumeRequested = true;
        notes.push(`task ${d.suspended.task.taskId} resumes with a fresh tick allowance`);
      } else {
        const s = d.suspended;
        d.suspended = undefined;
        const previous = d.tasks.find((t) => t.taskId === s.task.taskId);
        if (previous) this.record({ ...previous, outcome: 'ABORTED', agentState: d.agentState });
        notes.push(`task ${s.task.taskId} ended ABORTED (transcript kept); pass --resume to continue it instead`);
      }
    }
    const budget = d.config?.safety.tokenBudget;
    if (reason?.code === 'BUDGET_EXHAUSTED' && addTokens === 0 && budget !== undefined && d.tokensUsed >= budget) {
      notes.push(
        `the budget is still exhausted (${d.tokensUsed} of ${budget} tokens): the next LLM call will stop again; pass --add-tokens N to raise it`,
      );
    }
    const costBudget = d.config?.safety.costBudgetUsd;
    if (reason?.code === 'COST_BUDGET_EXHAUSTED' && costBudget !== undefined && (d.costUsd ?? 0) >= costBudget) {
      notes.push(
        `the cost budget is still spent ($${d.costUsd ?? 0} of $${costBudget}): the next LLM call will stop again; raise it first with starry limits ${d.agentId} --cost-budget-usd N`,
      );
    }
    return { unlocked: true, agentState: d.agentState, message: notes.join('; ') };
  }

  /**
   * Why an admin's change of the agent's limits is refused now (no limits yet, a change that does not
   * fit), or nothing.
   *
   * @throws RefusedError before the agent has a config; ConfigError for limits that do not fit.
   */
  validateLimits(input: LimitsChange): void {
    const d = this.data;
    if (!d.config)
      throw new RefusedError(
        `agent ${d.agentId} has no limits yet: its first task sets them (submit it with a config), then an admin may change them`,
      );
    changeLimits(d.config.safety, input.safety);
  }

  /**
   * `admin:limits`: an admin sets some of the agent's limits (raising or lowering them), recorded with who
   * did it. A running task keeps the limits it started with; the next one runs with these.
   */
  setLimits(input: LimitsChange): LimitsResult {
    this.validateLimits(input);
    const d = this.data;
    const config = d.config!;
    const { limits, from, to } = changeLimits(config.safety, input.safety);
    const changed: string[] = LIMIT_FIELDS.filter((f) => f in to);
    const rules = config.tools.approval;
    // Rules that ask nothing and deny nothing are none.
    const next =
      input.approval && (input.approval.ask.length || input.approval.deny.length) ? input.approval : undefined;
    const rulesChanged = input.approval !== undefined && JSON.stringify(next) !== JSON.stringify(rules);
    const tools = { ...config.tools };
    if (rulesChanged) {
      if (next) tools.approval = next;
      else delete tools.approval;
      changed.push('approval');
    }
    d.config = { ...config, safety: limits, tools };
    // The budget set now holds the tokens added before.
    if (input.safety.tokenBudget !== undefined) d.addedTokens = 0;
    if (changed.length) {
      const record: LimitsRecord = { by: input.by ?? 'an admin', from, to };
      if (input.note) record.note = input.note;
      if (rulesChanged) record.approval = { ...(rules ? { from: rules } : {}), ...(next ? { to: next } : {}) };
      d.limitChanges = [...(d.limitChanges ?? []), record].slice(-LIMITS.limitChanges);
    }
    const said = changed.map((f) =>
      f === 'approval'
        ? `approval rules ${rulesText(rules)} → ${rulesText(next)}`
        : `${f} ${from[f as LimitField] ?? 'none'} → ${to[f as LimitField] ?? 'none'}`,
    );
    const message = changed.length
      ? `agent ${d.agentId}'s limits changed: ${said.join(', ')}${d.current ? ` (task ${d.current.task.taskId} keeps the limits it started with; the next task runs with these)` : ''}`
      : `agent ${d.agentId}'s limits already are these: nothing changed`;
    return { limits, ...((next ?? rules) ? { approval: rulesChanged ? next : rules } : {}), changed, message };
  }

  /**
   * What the agent's search attributes say: its state, lock reason and tokens (the running task's
   * included), and the running task's tick, else its latest task's last tick (so a locked agent shows
   * the tick its task stopped at).
   */
  reported(): Reported {
    return reportedOf(this.data);
  }

  /** What a task about to start reports (`TaskRun.reported`), given as its search attributes at its start. */
  taskStartReported(next: NextRun): Reported {
    return {
      agentId: this.data.agentId,
      agentState: 'EXECUTING',
      tick: next.checkpoint?.ticks ?? 0,
      tokensUsed: next.checkpoint?.tokensUsed ?? 0,
      lockReason: null,
    };
  }

  /** The agent's `state` query (`AgentStatus`). */
  status(): AgentStatus {
    const d = this.data;
    const s: AgentStatus = {
      agentId: d.agentId,
      agentState: d.agentState,
      tokensUsed: d.tokensUsed + (d.current?.runTokens ?? 0),
      tokenBudget: d.config?.safety.tokenBudget ?? 0,
      ...this.spend(),
      queue: ordered(d.inbox).map((t) => ({ taskId: t.taskId, priority: t.priority, goal: t.goal })),
      cancelledTasks: d.cancelledTasks,
      counters: d.counters,
      tasks: d.tasks,
      unlocks: d.unlocks,
      limitChanges: d.limitChanges ?? [],
      guide: d.config?.guide ?? '',
      llm: d.config ? formatLlmSpec(d.config.llm) : '',
    };
    if (d.config) s.limits = d.config.safety;
    if (d.config?.tools.approval) s.approvalRules = d.config.tools.approval;
    if (d.reason) s.reason = d.reason;
    if (d.halt) s.halt = d.halt;
    if (d.current)
      s.currentTask = {
        taskId: d.current.task.taskId,
        workflowId: d.current.workflowId,
        tick: d.current.tick,
        runTokens: d.current.runTokens,
        ...(d.current.runCostUsd !== undefined ? { runCostUsd: d.current.runCostUsd } : {}),
        ...(d.current.traceId ? { traceId: d.current.traceId } : {}),
      };
    if (d.suspended) s.suspendedTask = { taskId: d.suspended.task.taskId, workflowId: d.suspended.workflowId };
    if (d.approvals?.length) s.approvals = d.approvals;
    return s;
  }

  /**
   * The agent's cached input tokens and cost, the running task's so far included, each when there is
   * some; and its cost budget, when it has one.
   */
  private spend(): Pick<AgentStatus, 'cachedInputTokens' | 'costUsd' | 'costBudgetUsd'> {
    const d = this.data;
    const cached = (d.cachedInputTokens ?? 0) + (d.current?.runCachedInputTokens ?? 0);
    const cost =
      d.costUsd === undefined && d.current?.runCostUsd === undefined
        ? undefined
        : roundUsd((d.costUsd ?? 0) + (d.current?.runCostUsd ?? 0));
    const budget = d.config?.safety.costBudgetUsd;
    return {
      ...(cached ? { cachedInputTokens: cached } : {}),
      ...(cost !== undefined ? { costUsd: cost } : {}),
      ...(budget !== undefined ? { costBudgetUsd: budget } : {}),
    };
  }

  /** The Web UI's current details of the agent (markdown): its state and why, first, then what it holds. */
  details(): string {
    const d = this.data;
    const queue = ordered(d.inbox);
    const c = d.config;
    return [
      `### Agent ${d.agentId} · ${d.agentState}${d.reason ? ` (${d.reason.code})` : ''}`,
      d.reason ? `> ${d.reason.message}` : '',
      d.halt ? `> and SYSTEM_HALT by ${d.halt.by}${d.halt.note ? `: ${d.halt.note}` : ''} while locked` : '',
      this.locked ? `- **locked**: refuses tasks until \`starry unlock ${d.agentId}\`` : '',
      c
        ? `- tokens **${d.tokensUsed}** / ${c.safety.tokenBudget}${d.costUsd !== undefined || c.safety.costBudgetUsd !== undefined ? ` · cost **$${d.costUsd ?? 0}**${c.safety.costBudgetUsd !== undefined ? ` / $${c.safety.costBudgetUsd}` : ''}` : ''} · guide \`${c.guide}\` · llm \`${formatLlmSpec(c.llm)}\``
        : `- tokens **${d.tokensUsed}** · no config yet`,
      c
        ? `- limits: ${LIMIT_FIELDS.filter((f) => c.safety[f] !== undefined)
            .map((f) => `${f} ${c.safety[f]}`)
            .join(' · ')}`
        : '',
      c?.tools.approval ? `- approval rules: ${rulesText(c.tools.approval)}` : '',
      d.limitChanges?.length ? `- limits last changed by ${d.limitChanges.at(-1)!.by}` : '',
      d.current ? `- running **${d.current.task.taskId}** at tick ${d.current.tick}` : '- no task running',
      ...(d.approvals ?? []).map((p) => approvalLine(d.agentId, p)),
      d.suspended
        ? `- suspended **${d.suspended.task.taskId}**: \`starry unlock ${d.agentId} --resume\` continues it`
        : '',
      `- queue: ${queue.length ? queue.map((t) => `${t.taskId} (p${t.priority})`).join(', ') : 'empty'}`,
      d.cancelledTasks.length ? `- cancelled by halt: ${d.cancelledTasks.length}` : '',
    ]
      .filter(Boolean)
      .join('\n');
  }
}

/** Approval rules as people read them: `ask [shell.run] deny [http.get]`, or `none`. */
function rulesText(rules: { ask: ApprovalRule[]; deny: ApprovalRule[] } | undefined): string {
  if (!rules) return 'none';
  return `ask [${rules.ask.map(ruleText).join(', ')}] deny [${rules.deny.map(ruleText).join(', ')}]`;
}
