/**
 * The agent entity's state machine (docs/ARCHITECTURE.md#workflows): inbox, lock state, cumulative budget, carried
 * counters, cancelled and suspended tasks. Pure: the agent workflow holds one and calls it from its
 * handlers; its `data` is plain and is what continue-as-new carries.
 *
 * `WAITING_FOR_EVENT ⇄ EXECUTING`, `EXECUTING → SAFETY_LOCKOUT | ERROR_PAUSED | STOPPED`,
 * `any → STOPPED` (halt), `locked → WAITING_FOR_EVENT` (unlock).
 */
import { parseAgentConfig, type AgentConfig } from './config';
import { clear, dequeue, DEFAULT_TASK_PRIORITY, emptyInbox, enqueue, ordered, type PriorityInbox, type QueuedTask } from './priority-inbox';
import { initialCounters, type SafetyCounters } from './safety-monitor';
import { LIMITS, parsePayload, SUBMIT_EXPIRED, SubmitTaskInputSchema, type CancelledTask, type HaltInput, HumanMessage, SubmitTaskResult, UnlockInput, UnlockRecord, UnlockResult } from './contract';
import { RefusedError } from './errors';
import { fitResult, jsonBytes } from './compact';
import type { TaskRunOutput } from './task-run';
import { isLocked, reasonText, type AgentState, type LockReason, type TaskCheckpoint, type TaskResult } from './types';

export { RefusedError };

/** Results and unlock records kept in state (the newest); older ones live in the task workflows' histories. */
export const KEEP_RECENT = LIMITS.keptResults;

export type { CancelledTask, HumanMessage, UnlockRecord };

export interface RunningTask {
  task: QueuedTask;
  workflowId: string;
  tick: number;
  /** Tokens this run has used so far (from the task's progress reports). */
  runTokens: number;
  /** Human messages forwarded to this run (bounded by LIMITS.messagesPerRun). */
  messages?: number;
}

export interface SuspendedTask {
  task: QueuedTask;
  workflowId: string;
  checkpoint: TaskCheckpoint;
}

/** Everything the agent carries across tasks and continue-as-new. */
export interface AgentData {
  agentId: string;
  /** Absent until the agent's first submit is accepted: that task's config becomes the agent's. */
  config?: AgentConfig;
  agentState: AgentState;
  reason?: LockReason;
  tokensUsed: number;
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
  /** Tokens humans added with `unlock --add-tokens`: kept on top of the budget of every later task's config. */
  addedTokens?: number;
  /**
   * The answers to the latest submits, by update id. Temporal may deliver an update again to the run
   * after a continue-as-new (temporalio/temporal#6375): the same update gets the same answer, once.
   */
  submits?: { updateId: string; result: SubmitTaskResult }[];
}

/** A `submitTask` payload after checking: its config complete. */
export interface ParsedSubmit {
  goal: string;
  priority?: number;
  taskId?: string;
  config?: AgentConfig;
  /** Epoch ms after which the submit is refused (the client stopped waiting for a worker). */
  acceptBy?: number;
}

/** What to start next: a queued task, or a suspended one to resume. */
export interface NextRun {
  task: QueuedTask;
  workflowId: string;
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
    return !d.current && !d.suspended && !d.inbox.items.length && !d.tasks.length && !d.cancelledTasks.length && !d.pendingMessages.length && !d.unlocks.length;
  }

  /** The agent's config; there is one whenever a task has been accepted. */
  get config(): AgentConfig {
    const { config } = this.data;
    if (!config) throw new Error(`agent ${this.data.agentId} has no config: no task was accepted yet`);
    return config;
  }

  /**
   * Check a raw `submitTask` payload against the contract and fill in its config's defaults (the
   * agent's own `llm` when the config names none).
   *
   * @throws InvalidArgumentError (a ConfigError for the config) naming every invalid field.
   */
  parseSubmit(raw: unknown): ParsedSubmit {
    const input = parsePayload(SubmitTaskInputSchema, raw, 'submitTask');
    const out: ParsedSubmit = { goal: input.goal };
    if (input.priority !== undefined) out.priority = input.priority;
    if (input.taskId !== undefined) out.taskId = input.taskId;
    if (input.acceptBy !== undefined) out.acceptBy = input.acceptBy;
    if (input.config !== undefined) out.config = parseAgentConfig(input.config, this.data.config?.llm, 'task config');
    return out;
  }

  /**
   * Why a submit is refused, or nothing. The payload's shape is checked before (SubmitTaskInputSchema);
   * this checks it against the agent's state and, given the time `now` (the validator's), its `acceptBy`.
   */
  validateSubmit(input: { goal: string; priority?: number; taskId?: string; config?: unknown; acceptBy?: number }, updateId?: string, now?: number): void {
    if (this.answered(updateId)) return;
    const d = this.data;
    if (now !== undefined && input.acceptBy !== undefined && now > input.acceptBy) {
      throw new RefusedError(
        `the submit reached agent ${d.agentId} at ${new Date(now).toISOString()}, after ${new Date(input.acceptBy).toISOString()}, when its client stopped waiting for a worker: it is not run. Submit it again (the same Idempotency-Key or task id is safe); if this keeps happening, the client's clock may be behind the server's`,
        { issues: [SUBMIT_EXPIRED] },
      );
    }
    if (d.config === undefined && input.config === undefined) {
      throw new RefusedError(`agent ${d.agentId} has no config yet: its first task needs one (an LLM and a workspace)`);
    }
    if (this.locked) {
      const why = d.reason ? ` (${reasonText(d.reason)})` : '';
      throw new RefusedError(
        `agent ${d.agentId} is ${d.agentState}${why} and refuses tasks until a human unlocks it: starry unlock ${d.agentId}`,
      );
    }
    if (typeof input.goal !== 'string' || input.goal.trim() === '') throw new RefusedError('the task needs a non-empty goal');
    if (d.inbox.items.length >= LIMITS.queuedTasks) {
      throw new RefusedError(`agent ${d.agentId} already has ${d.inbox.items.length} tasks queued (the most it takes): submit again when some have run`);
    }
    // Everything the agent carries goes through continue-as-new as one payload: keep it well inside 2 MB.
    const bytes = jsonBytes(d) + jsonBytes(input);
    if (bytes > LIMITS.agentStateBytes) {
      throw new RefusedError(
        `agent ${d.agentId} would carry ${Math.ceil(bytes / 1000)} KB of queued, cancelled and recent tasks, more than the ${LIMITS.agentStateBytes / 1000} KB it keeps (Temporal's payload limit is 2 MB): submit again when some have run, or with a shorter goal`,
      );
    }
    if (input.taskId !== undefined && this.knows(input.taskId)) throw new RefusedError(`task id ${input.taskId} is already used by agent ${d.agentId}`);
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

  submit(input: ParsedSubmit, updateId?: string): SubmitTaskResult {
    const again = this.answered(updateId);
    if (again) return again;
    this.validateSubmit(input);
    const d = this.data;
    let taskId = input.taskId;
    // The agent's own numbering skips ids a caller chose, so two tasks never share a workflow id.
    while (taskId === undefined || (input.taskId === undefined && this.knows(taskId))) taskId = `task-${d.nextTaskNumber++}`;
    const task: Omit<QueuedTask, 'seq'> = { taskId, goal: input.goal, priority: input.priority ?? DEFAULT_TASK_PRIORITY };
    if (input.config) task.config = input.config;
    // A new agent's first task brings its config.
    d.config ??= input.config;
    d.inbox = enqueue(d.inbox, task);
    // A cancelled task submitted again under its id is no longer cancelled.
    d.cancelledTasks = d.cancelledTasks.filter((c) => c.taskId !== taskId);
    const position = ordered(d.inbox).findIndex((t) => t.taskId === taskId) + (d.current ? 1 : 0);
    const result = { taskId, workflowId: this.workflowIdOf(taskId), position };
    if (updateId !== undefined) d.submits = [...(d.submits ?? []), { updateId, result }].slice(-LIMITS.rememberedSubmits);
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
    let next: NextRun;
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
    // A task's own config replaces the agent's, but the tokens a human added stay added.
    if (next.task.config) d.config = withAddedTokens(next.task.config, d.addedTokens ?? 0);
    d.current = { task: next.task, workflowId: next.workflowId, tick: next.checkpoint?.ticks ?? 0, runTokens: 0 };
    d.agentState = 'EXECUTING';
    d.reason = undefined;
    return next;
  }

  /** Human messages waiting for the next task. */
  takePendingMessages(): HumanMessage[] {
    return this.data.pendingMessages.splice(0);
  }

  progress(p: { taskId: string; tick: number; runTokens: number; counters: SafetyCounters; lastErrorCode?: string }): void {
    const c = this.data.current;
    if (!c || c.task.taskId !== p.taskId) return;
    c.tick = p.tick;
    c.runTokens = p.runTokens;
    this.data.counters = p.counters;
    if (p.lastErrorCode) this.data.lastErrorCode = p.lastErrorCode;
  }

  /** A run ended: account for it, and lock when a breaker (or a fatal error) says so. */
  finish(out: TaskRunOutput): TaskResult {
    const d = this.data;
    const running = d.current;
    d.current = undefined;
    d.tokensUsed += out.runTokens;
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
    d.tasks = keepRecent([...d.tasks.filter((t) => t.taskId !== result.taskId), fitResult(result, LIMITS.keptResultBytes)]);
  }

  /**
   * SYSTEM_HALT, priority 0: STOPPED at once, the inbox cleared into `cancelledTasks`. Returns the
   * running task's workflow id, which the workflow forwards the halt to.
   */
  halt(input: HaltInput = {}): { forwardTo?: string; cleared: number } {
    const d = this.data;
    const by = input.by ?? 'a human operator';
    d.agentState = 'STOPPED';
    d.reason = { code: 'SYSTEM_HALT', message: `SYSTEM_HALT by ${by}${input.note ? `: ${input.note}` : ''}` };
    d.resumeRequested = false;
    const { cleared, inbox } = clear(d.inbox);
    d.inbox = inbox;
    const reason = `cancelled by SYSTEM_HALT (${by}) before it started; resubmit it to run it`;
    const records = cleared.map((t): CancelledTask => ({ taskId: t.taskId, goal: t.goal, priority: t.priority, reason, ...(t.config ? { config: t.config } : {}) }));
    d.cancelledTasks = [...d.cancelledTasks, ...records].slice(-LIMITS.cancelledTasks);
    return { forwardTo: d.current?.workflowId, cleared: cleared.length };
  }

  /** Why a human message is refused (too many for the running task, or waiting), or nothing. */
  validateMessage(): void {
    const d = this.data;
    if (d.current && (d.current.messages ?? 0) >= LIMITS.messagesPerRun) {
      throw new RefusedError(`task ${d.current.task.taskId} has already received ${LIMITS.messagesPerRun} messages, the most one run takes: wait for it to end, or halt it`);
    }
    if (!d.current && d.pendingMessages.length >= LIMITS.pendingMessages) {
      throw new RefusedError(`agent ${d.agentId} already holds ${d.pendingMessages.length} messages for its next task, the most it keeps: submit a task first`);
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

  /** `admin:unlock`: leave any locked state; resume or abort the suspended task. */
  unlock(input: UnlockInput = {}): UnlockResult {
    const d = this.data;
    if (!this.locked) {
      return { unlocked: false, agentState: d.agentState, message: `agent ${d.agentId} is not locked (${d.agentState}): nothing to unlock` };
    }
    const addTokens = input.addTokens ?? 0;
    if (!Number.isInteger(addTokens) || addTokens < 0) throw new RangeError(`addTokens must be a whole number >= 0, got ${addTokens}`);
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
    const budget = d.config?.safety.tokenBudget ?? 0;
    if (reason?.code === 'BUDGET_EXHAUSTED' && addTokens === 0 && d.tokensUsed >= budget) {
      notes.push(`the budget is still exhausted (${d.tokensUsed} of ${budget} tokens): the next LLM call will stop again; pass --add-tokens N to raise it`);
    }
    return { unlocked: true, agentState: d.agentState, message: notes.join('; ') };
  }
}
