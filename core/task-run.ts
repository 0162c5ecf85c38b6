/**
 * One task run's bookkeeping (docs/ARCHITECTURE.md#workflows): the transcript, the counters, the turn's
 * skip reasons and alerts, and how the run ends. Pure, like `AgentEntity` for the agent: the task
 * workflow (`workflows/task.ts`) calls one named step per part of the tick and performs what it is told
 * (the LLM and tool activities, the reports), so every rule of the loop is here and unit-tested.
 *
 * A tick: `startTick` → `llmCall` → the LLM activity → `llmAnswered` (or `llmFailed`) → per tool call
 * `beforeTool` → the tool activity → `afterTool` (or `toolCancelled` / `toolFailed`) → `endTurn`. Any step
 * may return a `TaskEnd`; `close` turns it into the run's output.
 */
import {
  approvalVerdict,
  approvalLine,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  deniedError,
  MAX_WAITING_CALLS,
  type ApprovalDecision,
  type ApprovalRules,
  type PendingApproval,
} from './approval';
import { cutStrings, fitResult, jsonBytes } from './compact';
import type { AgentConfig } from './config';
import {
  assembleContext,
  calibrate,
  DEFAULT_BYTES_PER_TOKEN,
  entriesTokens,
  resultChars,
  type WindowLimits,
} from './context';
import {
  checkedPlan,
  DEFAULT_CONTEXT_STRATEGY,
  getContextStrategy,
  type ContextPlan,
  type ContextStrategy,
  type ContextView,
} from './context-strategy';
import { SUMMARY_MAX_TOKENS } from './context-summary';
import type { TaskStatus } from './contract';
import type { Reported } from './types';
import type { HeldLease } from './budget';
import { humanMessageSchema, LIMITS, type HumanMessage, type TaskProgress } from './payloads';
import { failure, normalizedError, type NormalizedError, type ToolExecutionResult } from './errors';
import { fingerprint } from './fingerprint';
import { getGuide, type Guide, type PainContext } from './guides';
import { formatLlmSpec } from './llm-spec';
import {
  assistantMessage,
  type ChatMessage,
  type ContextDelta,
  type LlmCallInput,
  type LlmResponse,
  type LlmToolCall,
  type StoredSummary,
  type SummaryInput,
  type SummaryResponse,
  type TokenUsage,
  type ToolSpec,
} from './llm';
import { costUsd, roundUsd, type Price } from './pricing';
import { SafetyMonitor, type LockVerdict, type SafetyCounters } from './safety-monitor';
import { fatalLock, historyLimit, type UsageInput } from './safety-rungs';
import {
  approvalAskedEvent,
  approvalDecidedEvent,
  breakerEvents,
  countsOf,
  endCounts,
  haltEvent,
  painEvent,
  tickCount,
  type BreakerFacts,
  type MetricCount,
  type TelemetryEvent,
} from './telemetry';
import { offeredTools, toolSpecs, toolSummary, validateToolCall } from './tools';
import {
  frustrationFirst,
  MAX_RESULT_CHARS,
  retryHistory,
  skippedText,
  toolResultText,
  verifyText,
} from './transcript';
import type {
  AgentState,
  Injection,
  LockReason,
  TaskCheckpoint,
  TaskOutcome,
  TaskResult,
  ToolCallRecord,
} from './types';

/** The task workflow's input. */
export interface TaskRunInput {
  agentId: string;
  taskId: string;
  goal: string;
  config: AgentConfig;
  counters: SafetyCounters;
  /** The agent's cumulative usage before this run: the budget is per agent. */
  agentTokensUsed: number;
  /** The agent's cumulative cost before this run, in USD (the cost budget is per agent too). */
  agentCostUsd?: number;
  /**
   * The price of the task's model (core/pricing.ts), as the task learnt it at its start (the config's
   * `pricing`, else the worker's table in the `listTools` answer) and carried when it continues as new,
   * so a replay prices its calls the same. Absent: the calls have no cost.
   */
  price?: Price;
  /** Present when `admin:unlock --resume` continues a suspended task. */
  checkpoint?: TaskCheckpoint;
  /** Human messages that arrived while no task was running (or before the task continued as new). */
  messages?: HumanMessage[];
  /** Present when the task continued as new: what the run before this one had counted. */
  continued?: Continued;
  /**
   * The tools the worker offers this task (built-in, the worker's own, its MCP servers'), as listed at
   * the task's start and carried when it continues as new. Absent: the built-in tools `tools.allow` names.
   */
  tools?: ToolSpec[];
  /** The worker's approval rules, as listed at the task's start (with the tools) and carried likewise. */
  workerApproval?: ApprovalRules;
  /** The task traces (its worker said so at its start): carried when it continues as new. */
  traced?: boolean;
  /** The task counts its facts in metrics (its worker said so at its start): carried likewise. */
  metered?: boolean;
  /** The submitter's trace context: a new task's span links to it. */
  traceparent?: string;
  /** The shared budget's lease the task holds (config `budget`), carried when it continues as new. */
  lease?: HeldLease;
  /**
   * The tool activities' task queue, as the workflow worker named it at the task's start (`listTools`),
   * carried when it continues as new. Absent: the tools run on the workflow's own queue.
   */
  toolTaskQueue?: string;
}

/** What a task's next run takes over when it continues as new, besides the checkpoint. */
export interface Continued {
  runTokens: number;
  runCachedInputTokens?: number;
  runCostUsd?: number;
  /** The tick the loop cap counts from (the start or the last resume). */
  allowanceStart: number;
  /** Human messages taken this run, against `LIMITS.messagesPerRun`. */
  received: number;
  lastErrorCode?: string;
  /** Oldest tool calls and injections no longer carried. */
  omitted: { toolCalls: number; injections: number };
}

/** How a run keeps its transcript. */
export interface TaskRunOptions {
  /**
   * Large content in the content store, the history carrying references (the task workflow's runs); without it
   * (the pure tests), each LLM call carries the whole context.
   */
  store?: boolean;
}

/** The outcome of a task run: the task workflow's result, and what the agent consumes. */
export interface TaskRunOutput {
  result: TaskResult;
  counters: SafetyCounters;
  /** Tokens this run used, to add to the agent's total. */
  runTokens: number;
  /** Cached input tokens and cost of this run, when there are some, to add likewise. */
  runCachedInputTokens?: number;
  runCostUsd?: number;
  lock?: LockVerdict;
  /** Present when SUSPENDED. */
  checkpoint?: TaskCheckpoint;
  /** Human messages that arrived too late for this task's LLM; the agent keeps them for its next run. */
  undelivered?: HumanMessage[];
}

/** How a run ends: its outcome, the agent's state after it, and what the result carries. */
export interface TaskEnd {
  outcome: TaskOutcome;
  agentState: AgentState;
  error?: NormalizedError;
  finalText?: string;
  reason?: LockReason;
  /** A breaker or a fatal error: the agent locks (and may alert). */
  lock?: LockVerdict;
}

/** A tool call between `beforeTool` and its recording; pass it back to `afterTool` and its siblings. */
export interface PendingCall {
  call: LlmToolCall;
  record: ToolCallRecord;
}

/**
 * What `beforeTool` asks of the workflow: run the tool with these checked arguments (and this activity
 * summary), or nothing (the call is already recorded).
 */
export type ToolStep = { run: true; pending: PendingCall; args: unknown; summary: string } | { run: false };

/** What `llmAnswered` asks of the workflow next. */
export type AnswerStep = { end: TaskEnd } | { verify: true } | { calls: LlmToolCall[] };

interface Turn {
  tick: number;
  alerts: Array<{ kind: Injection['kind']; text: string }>;
  skipReason?: string;
  lock?: LockVerdict;
  /** The turn's calls that a rule stopped or that wait for a human, by their index in the turn. */
  approvals?: Map<number, TurnApproval>;
}

/** A call of the turn under an approval rule: refused unasked, or asked (and then decided or expired). */
type TurnApproval =
  | { verdict: 'deny'; error: NormalizedError }
  | { verdict: 'ask'; pending: PendingApproval; timeoutMs: number; decision?: ApprovalDecision; expired?: boolean };

/** A call's id within its task: its tick and its index in the turn (also the tool activity's call id). */
export function callIdOf(tick: number, index: number): string {
  return `t${tick}.${index}`;
}

const HALTED_BEFORE = 'SYSTEM_HALT: stopped by a human before this call started';
const HALTED_WHILE = 'SYSTEM_HALT: cancelled while running';

/** The agent and the search attributes hear of a task's counts every this many ticks (see `progressDue`). */
export const PROGRESS_EVERY_TICKS = 10;

/** Tool calls and injections a task carries into its next run at most (the transcript keeps them all). */
export const CARRIED_RECORDS = 50;
/** Entries anchored at the start of every context: the system prompt and the goal. */
const ANCHORED = 2;
/** A summary's output is capped at 1/SUMMARY_SHARE of the room after the head (a quarter). */
const SUMMARY_SHARE = 4;

/** A new task's checkpoint: the anchored system prompt and goal, nothing done yet. */
function freshCheckpoint(guide: Guide, config: AgentConfig, goal: string, tools?: readonly string[]): TaskCheckpoint {
  return {
    messages: [
      { role: 'system', text: guide.systemPrompt(config, tools) },
      { role: 'user', text: goal },
    ],
    ticks: 0,
    callNumber: 0,
    tokensUsed: 0,
    toolCalls: [],
    injections: [],
    verifyAsked: false,
  };
}

/**
 * One run of a task workflow, over plain data.
 *
 * ```ts
 * const run = new TaskRun(input, workflowInfo().workflowId);
 * for (;;) {
 *   const end = run.startTick({ events, bytes });
 *   if (end) return finish(end);
 *   const call = run.llmCall();
 *   if ('end' in call) return finish(call.end);
 *   const next = run.llmAnswered(await llm(call.request));
 *   // ... tools, then run.endTurn()
 * }
 * ```
 */
export class TaskRun {
  readonly checkpoint: TaskCheckpoint;
  counters: SafetyCounters;
  /** Tokens this run has used. */
  runTokens = 0;
  /** Of its input tokens, those read from the provider's cache. */
  runCachedInputTokens = 0;
  /** What its calls cost, in USD (0 without a price). */
  runCostUsd = 0;
  halted = false;
  lastErrorCode?: string;
  /** The task's trace, when its worker traces: in its details, so a person goes from the Web UI to it. */
  traceId?: string;
  private readonly guide: Guide;
  private readonly inbox: HumanMessage[];
  private readonly allowanceStart: number;
  private received = 0;
  private omitted = { toolCalls: 0, injections: 0 };
  private turn: Turn = { tick: 0, alerts: [] };
  private readonly store: boolean;
  /** Where the window of the call in flight opened (store mode), to record what its manifest holds. */
  private windowFrom = ANCHORED;
  /** The context strategy's plan for the tick's call, made before its summary (`summaryDue`). */
  private planned?: Required<ContextPlan>;
  /** The tools the worker offers (see `TaskRunInput.tools`); absent: the built-in ones. */
  private tools?: ToolSpec[];
  /** Facts for the task's trace (core/telemetry.ts) since the workflow last drained them. */
  private events: TelemetryEvent[] = [];
  /** Their counts, and the ticks' and the end's, for the task's metrics (drained likewise). */
  private counts: MetricCount[] = [];

  constructor(
    readonly input: TaskRunInput,
    readonly workflowId: string,
    opts: TaskRunOptions = {},
  ) {
    this.guide = getGuide(input.config.guide);
    if (input.tools) this.tools = input.tools;
    this.checkpoint =
      input.checkpoint ??
      freshCheckpoint(
        this.guide,
        input.config,
        input.goal,
        input.tools?.map((t) => t.name),
      );
    this.counters = input.counters;
    this.inbox = [...(input.messages ?? [])];
    this.store = opts.store ?? false;
    const c = input.continued;
    // Ticks since the start (or the resume) are what the loop cap counts; continuing as new is neither.
    this.allowanceStart = c?.allowanceStart ?? this.checkpoint.ticks;
    if (c) {
      this.runTokens = c.runTokens;
      this.runCachedInputTokens = c.runCachedInputTokens ?? 0;
      this.runCostUsd = c.runCostUsd ?? 0;
      this.received = c.received;
      this.omitted = { ...c.omitted };
      if (c.lastErrorCode) this.lastErrorCode = c.lastErrorCode;
    }
  }

  private get config(): AgentConfig {
    return this.input.config;
  }

  /**
   * The tools the worker listed for this task: offered to the model from the first LLM call on (a
   * new task's system prompt names them, and the commands `shell.run` starts for it, which the worker
   * resolves when the config names none; a resumed one keeps the prompt it had).
   */
  offer(tools: ToolSpec[], shellAllow?: string[], workerApproval?: ApprovalRules): void {
    this.tools = tools;
    if (workerApproval) this.input.workerApproval = workerApproval;
    if (!this.input.checkpoint && this.checkpoint.callNumber === 0) {
      const config = shellAllow ? { ...this.config, tools: { ...this.config.tools, shellAllow } } : this.config;
      this.checkpoint.messages[0] = {
        role: 'system',
        text: this.guide.systemPrompt(
          config,
          tools.map((t) => t.name),
        ),
      };
    }
  }

  /**
   * The price of the task's model, as it learnt it at its start (carried from then on): its calls cost
   * from the first on.
   */
  priced(price: Price | undefined): void {
    if (price) this.input.price = price;
    else delete this.input.price;
  }

  /** The agent's cost so far, this run's included. */
  private agentCost(): number {
    return roundUsd((this.input.agentCostUsd ?? 0) + this.runCostUsd);
  }

  /** What the budget rungs weigh before a call: the agent's tokens and cost, and the model's price. */
  private usage(): UsageInput {
    const { price } = this.input;
    return {
      tokensUsed: this.input.agentTokensUsed + this.runTokens,
      costUsd: this.agentCost(),
      ...(price ? { price } : {}),
    };
  }

  /** The task could not start: the worker could not list its tools (an MCP server that does not start). */
  setupFailed(error: NormalizedError): TaskEnd {
    this.lastErrorCode = error.code;
    return failed(error);
  }

  /** The tool specs offered to the model. */
  private offeredSpecs(): ToolSpec[] {
    return this.tools ?? toolSpecs(this.config.tools.allow);
  }

  /** The names of the tools offered to the model. */
  private offeredNames(): string[] {
    return this.tools ? this.tools.map((t) => t.name) : offeredTools(this.config.tools.allow);
  }

  /** SYSTEM_HALT arrived: no further call starts. */
  halt(): void {
    if (!this.halted) this.record(haltEvent(this.checkpoint.ticks));
    this.halted = true;
  }

  /**
   * The trace's facts recorded since the last call (pain, breakers, halt, approvals), oldest first: the
   * workflow adds them to the task's span when the worker traces, and drops them otherwise.
   */
  drainEvents(): TelemetryEvent[] {
    return this.events.splice(0);
  }

  /**
   * The counter additions recorded since the last call (ticks, pain, breaker trips, halts, the end's
   * outcome and lockout): the workflow adds them to the worker's metrics when it meters.
   */
  drainCounts(): MetricCount[] {
    return this.counts.splice(0);
  }

  /** A fact for the trace, and what it adds to the metrics. */
  private record(...events: TelemetryEvent[]): void {
    this.events.push(...events);
    for (const e of events) this.counts.push(...countsOf(e));
  }

  /**
   * A human message for the next tick, checked like at the agent and bounded per run. Returns why it
   * was ignored, or undefined when it was taken.
   */
  receive(raw: unknown): string | undefined {
    const m = humanMessageSchema().safeParse(raw);
    if (!m.success) return m.error.message;
    if (this.received >= LIMITS.messagesPerRun) return `more than ${LIMITS.messagesPerRun} this run`;
    this.received++;
    this.inbox.push(m.data);
    return undefined;
  }

  /** The task's `state` query: everything its result has so far, plus the counters and the halt flag. */
  status(): TaskStatus {
    return { ...this.soFar(), running: true, halted: this.halted, counters: this.counters, ...this.lastError() };
  }

  /**
   * Whether the agent should hear of this tick, and the task's search attributes take its counts:
   * every `PROGRESS_EVERY_TICKS` ticks (clients read a running task's counts from the task itself,
   * `progress` query, and the Web UI from its details; the agent's own copy feeds its search
   * attributes and its fallback when a task cannot answer). Each report costs the agent a workflow
   * task, which at one per tick was a third of a tick's cost; each search-attribute write is a
   * visibility write, a quarter of the dev server's CPU a tick at 200 agents (docs/BENCHMARKS.md).
   */
  progressDue(): boolean {
    return this.checkpoint.ticks % PROGRESS_EVERY_TICKS === 0;
  }

  /** What the task reports to its agent after a tick. */
  progress(): TaskProgress {
    const cp = this.checkpoint;
    return {
      taskId: this.input.taskId,
      tick: cp.ticks,
      tokensUsed: cp.tokensUsed,
      runTokens: this.runTokens,
      ...(this.runCachedInputTokens ? { runCachedInputTokens: this.runCachedInputTokens } : {}),
      ...(this.input.price || this.runCostUsd ? { runCostUsd: this.runCostUsd } : {}),
      counters: this.counters,
      ...this.lastError(),
      ...(this.traceId ? { traceId: this.traceId } : {}),
    };
  }

  /**
   * The Web UI's current details of the task (markdown). A closed task says how it ended: a suspended
   * one shows as Completed in the list, so its page says that it waits for a human and how to resume.
   */
  details(agentState: AgentState, lockReason?: string, outcome?: TaskOutcome): string {
    const { safety } = this.config;
    const last = this.checkpoint.toolCalls.at(-1);
    const agentId = this.input.agentId;
    return [
      outcome
        ? `### Task ${this.input.taskId} · ${outcome} · agent ${agentState}`
        : `### Task ${this.input.taskId} · ${agentState}`,
      outcome === 'SUSPENDED'
        ? `- **suspended, waiting for a human**: \`starry unlock ${agentId} --resume\` continues it in a new run of this workflow; plain \`starry unlock ${agentId}\` ends it ABORTED`
        : '',
      `- tick **${this.checkpoint.ticks}** (cap ${safety.maxTicks}) · tokens **${this.input.agentTokensUsed + this.runTokens}** / ${safety.tokenBudget}${this.input.price ? ` · cost **$${this.agentCost()}**${safety.costBudgetUsd !== undefined ? ` / $${safety.costBudgetUsd}` : ''}` : ''}`,
      `- consecutive failures **${this.counters.consecutiveFailures}** · window ${this.counters.window.join(' ') || '—'}`,
      last
        ? `- last tool: \`${last.name}\` ${last.status}${last.error ? ` (${last.error.code})` : ''}`
        : '- no tool call yet',
      lockReason ? `- **${lockReason}**` : '',
      this.traceId ? `- trace \`${this.traceId}\`` : '',
      ...this.waitingApprovals().map((p) => approvalLine(agentId, p)),
    ].join('\n');
  }

  /**
   * Start a tick: a halt, the loop cap (per allowance) and Temporal's history limits end the run;
   * otherwise the tick is counted and the waiting human messages enter the context.
   */
  startTick(history: { events: number; bytes: number }): TaskEnd | undefined {
    if (this.halted) return this.cancelled();
    const cp = this.checkpoint;
    // The verification round asks about an answer already given: it is not a tick the loop cap counts,
    // so a final answer at the cap's last tick is verified and completes.
    const counted = cp.ticks - this.allowanceStart + (this.verifying() ? 0 : 1);
    const start = SafetyMonitor.onEventLoopStart(this.config.safety, { tick: counted });
    if (start.lock) return this.tripped(start.lock, { tick: counted });
    // Before the server would terminate the task with nothing kept.
    const limit = historyLimit(history);
    if (limit?.lock) return this.tripped(limit.lock, { historyEvents: history.events });
    const tick = ++cp.ticks;
    this.counts.push(tickCount());
    for (const m of this.inbox.splice(0))
      this.inject(tick, 'MESSAGE', `Message from ${m.by ?? 'a human operator'}: ${m.text}`);
    return undefined;
  }

  /**
   * The tick's LLM request: the context with the system prompt and goal anchored, checked against the
   * payload limit, and the budget (`beforeLLMCall`, which also caps the output tokens).
   */
  llmCall(): { end: TaskEnd } | { request: LlmCallInput } {
    const { config, input } = this;
    const cp = this.checkpoint;
    const tick = cp.ticks;
    // The submit check refuses this; a task picked up by a worker without the price still must not spend unchecked.
    if (config.safety.costBudgetUsd !== undefined && !input.price) {
      const error = normalizedError({
        code: 'EINVAL',
        kind: 'execution',
        source: 'cost budget',
        message: `safety.costBudgetUsd is set but the task has no price for its model ${formatLlmSpec(config.llm)}: its cost cannot be counted`,
        suggestion: `Add the model to the agent's "pricing" or to the worker's STARRY_PRICING, or leave costBudgetUsd out, and submit again.`,
      });
      return { end: { outcome: 'FAILED', agentState: 'WAITING_FOR_EVENT', error } };
    }
    const usage = this.usage();
    const budget = SafetyMonitor.beforeLLMCall(config.safety, usage);
    let context: Pick<LlmCallInput, 'messages' | 'tools' | 'context'>;
    if (this.store) {
      const strategy = this.contextStrategy();
      if (!('plan' in strategy)) return { end: failed(strategy) };
      const delta = this.contextDelta(strategy);
      context = { context: delta, ...(delta.base ? {} : { tools: this.offeredSpecs() }) };
    } else {
      const messages = assembleContext({ messages: cp.messages as ChatMessage[], window: config.contextWindow });
      // An LLM call's input is one payload: past Temporal's limit it could not even be scheduled.
      const contextBytes = jsonBytes(messages);
      if (contextBytes > LIMITS.llmInputBytes) {
        const error = normalizedError({
          code: 'E_OUTPUT_TOO_LARGE',
          kind: 'execution',
          source: 'task context',
          message: `the context of tick ${tick} is ${Math.ceil(contextBytes / 1000)} KB, more than the ${LIMITS.llmInputBytes / 1000} KB an LLM call may carry (Temporal's payload limit is 2 MB): lower contextWindow or tools.maxOutputBytes and submit again`,
        });
        return { end: { outcome: 'FAILED', agentState: 'WAITING_FOR_EVENT', error } };
      }
      context = { messages, tools: this.offeredSpecs() };
    }
    if (budget.lock) return { end: this.tripped(budget.lock, usage) };
    const callNumber = ++cp.callNumber;
    return {
      request: {
        llm: config.llm,
        agentId: input.agentId,
        taskId: input.taskId,
        callNumber,
        tick,
        ...context,
        maxOutputTokens: budget.maxOutputTokens,
        maxRetryDelayMs: config.retry.maximumIntervalMs,
      },
    };
  }

  /**
   * About how many tokens the call `llmCall` just built sends: the window it holds and the tools, at the
   * task's calibrated bytes per token. A shared budget's lease must cover them and the output cap.
   */
  inputEstimate(): number {
    const cp = this.checkpoint;
    const messages = this.store
      ? [...cp.messages.slice(0, ANCHORED), ...cp.messages.slice(this.windowFrom)]
      : assembleContext({ messages: cp.messages as ChatMessage[], window: this.config.contextWindow });
    const bytes = jsonBytes(messages) + jsonBytes(this.offeredSpecs());
    return Math.ceil(bytes / (cp.bytesPerToken ?? DEFAULT_BYTES_PER_TOKEN));
  }

  /** A lock from outside the run's own rungs (the shared budget refused a lease): its event, the run suspended. */
  lockedBy(lock: LockVerdict): TaskEnd {
    return this.tripped(lock, { tokensUsed: this.input.agentTokensUsed + this.runTokens });
  }

  /**
   * The LLM call failed for good: the controller cannot feel pain about itself, so the task fails;
   * a fatal error (401/403, a bug) also pauses the agent.
   */
  llmFailed(error: NormalizedError): TaskEnd {
    this.lastErrorCode = error.code;
    return failed(error);
  }

  /**
   * The model answered: count its tokens and keep its turn. No tool call is the final answer, after one
   * verification round when configured; otherwise the turn's calls are next.
   */
  llmAnswered(response: LlmResponse): AnswerStep {
    const cp = this.checkpoint;
    this.spent(response.usage);
    if (response.message && response.context) {
      cp.messages.push(response.message);
      this.sent(response.context, response.usage.inputTokens);
    } else {
      cp.messages.push(assistantMessage(response));
    }
    if (response.toolCalls.length === 0) {
      if (this.config.verify && !cp.verifyAsked) {
        cp.verifyAsked = true;
        this.inject(cp.ticks, 'VERIFY', verifyText(this.input.goal));
        return { verify: true };
      }
      return {
        end: {
          outcome: 'COMPLETED',
          agentState: 'WAITING_FOR_EVENT',
          ...(response.text !== undefined ? { finalText: response.text } : {}),
        },
      };
    }
    this.turn = { tick: cp.ticks, alerts: [] };
    return { calls: response.toolCalls };
  }

  /**
   * Before a tool call (the `index`-th of its turn): skipped when a halt, a lock or a frustration
   * intervention stopped the turn; rejected (recorded as pain) when the call is malformed, or denied
   * (a rule, a human, no decision in time: `E_DENIED` pain); otherwise the workflow runs it, with the
   * approver's edited arguments when they gave some.
   */
  beforeTool(call: LlmToolCall, index?: number): ToolStep {
    const args = call.rawArguments !== undefined && call.args === undefined ? call.rawArguments : (call.args ?? {});
    const pending: PendingCall = {
      call,
      record: { tick: this.turn.tick, name: call.name, args, fingerprint: fingerprint(call.name, args), status: 'ok' },
    };
    if (this.halted) this.turn.skipReason = HALTED_BEFORE;
    if (this.turn.skipReason) {
      this.skip(pending, this.turn.skipReason);
      return { run: false };
    }
    const checked = validateToolCall(call, this.offeredNames());
    if (!checked.ok) {
      this.afterTool(pending, failure(checked.error));
      return { run: false };
    }
    pending.record.args = checked.args;
    const approval = index === undefined ? undefined : this.turn.approvals?.get(index);
    const runWith = approval ? this.approved(approval, pending) : checked.args;
    if (runWith === undefined) return { run: false };
    return { run: true, pending, args: runWith, summary: toolSummary(call.name, runWith) };
  }

  /**
   * Which of the turn's calls wait for a human before any of them runs (the config's `tools.approval`
   * and the worker's rules): returns them, to list at the agent; none, and the turn runs as always. A
   * call a rule denies, or one past `MAX_WAITING_CALLS`, is refused unasked when its turn comes.
   */
  askApprovals(calls: readonly LlmToolCall[], nowMs: number): PendingApproval[] {
    const rules = this.config.tools.approval;
    const worker = this.input.workerApproval;
    if (!rules && !worker) return [];
    const timeoutMs = rules?.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    const approvals = new Map<number, TurnApproval>();
    const asked: PendingApproval[] = [];
    for (const [index, call] of calls.entries()) {
      const checked = validateToolCall(call, this.offeredNames());
      if (!checked.ok) continue; // refused as pain by beforeTool, never asked
      const v = approvalVerdict(rules, worker, call.name, checked.args);
      if (v.verdict === 'run') continue;
      if (v.verdict === 'deny' || asked.length >= MAX_WAITING_CALLS) {
        const why = v.verdict === 'deny' ? v : { overflow: MAX_WAITING_CALLS };
        approvals.set(index, { verdict: 'deny', error: deniedError(call.name, why) });
        continue;
      }
      const pending: PendingApproval = {
        callId: callIdOf(this.turn.tick, index),
        taskId: this.input.taskId,
        workflowId: this.workflowId,
        tool: call.name,
        args: cutStrings(checked.args),
        tick: this.turn.tick,
        rule: v.rule,
        from: v.from,
        askedAt: new Date(nowMs).toISOString(),
        expiresAt: new Date(nowMs + timeoutMs).toISOString(),
      };
      approvals.set(index, { verdict: 'ask', pending, timeoutMs });
      asked.push(pending);
      this.events.push(approvalAskedEvent(pending));
    }
    this.turn.approvals = approvals;
    return asked;
  }

  /** The turn's calls still waiting for a decision. */
  waitingApprovals(): PendingApproval[] {
    return [...(this.turn.approvals?.values() ?? [])].flatMap((a) =>
      a.verdict === 'ask' && !a.decision && !a.expired ? [a.pending] : [],
    );
  }

  /** Milliseconds until the first waiting call expires (0: one has). */
  approvalTimeLeft(nowMs: number): number {
    const ends = this.waitingApprovals().map((p) => Date.parse(p.expiresAt) - nowMs);
    return Math.max(0, Math.min(...ends));
  }

  /** A human's decision, forwarded by the agent. Returns why it was not taken (no such call waits). */
  decide(decision: ApprovalDecision): string | undefined {
    const a = [...(this.turn.approvals?.values() ?? [])].find(
      (x) => x.verdict === 'ask' && x.pending.callId === decision.callId,
    );
    if (!a || a.verdict !== 'ask') return `no call ${decision.callId} waits in this turn`;
    if (a.expired) return `call ${decision.callId} expired before the decision arrived`;
    if (a.decision) return `call ${decision.callId} was decided already`;
    a.decision = decision;
    return undefined;
  }

  /** The waiting calls whose time is up count as denied (`E_DENIED`, "no decision within …"). */
  expireApprovals(nowMs: number): void {
    for (const a of this.turn.approvals?.values() ?? []) {
      if (a.verdict === 'ask' && !a.decision && Date.parse(a.pending.expiresAt) <= nowMs) a.expired = true;
    }
  }

  /**
   * A call under an approval rule at its turn: the arguments to run it with (the approver's edit, checked
   * like the model's), or undefined when it is recorded as not run (denied, expired, an edit that fails).
   */
  private approved(approval: TurnApproval, pending: PendingCall): unknown {
    const { call, record } = pending;
    const refuse = (error: NormalizedError) => {
      this.afterTool(pending, failure(error));
      return undefined;
    };
    if (approval.verdict === 'deny') return refuse(approval.error);
    const { decision } = approval;
    this.events.push(
      approvalDecidedEvent(
        approval.pending.callId,
        approval.expired || !decision ? 'expired' : decision.decision === 'deny' ? 'denied' : 'approved',
      ),
    );
    if (approval.expired || !decision) {
      record.approval = { decision: 'expired' };
      return refuse(deniedError(call.name, { expiredAfterMs: approval.timeoutMs }));
    }
    const who = { by: decision.by, at: decision.at };
    if (decision.decision === 'deny') {
      record.approval = { decision: 'denied', ...who, ...(decision.reason ? { reason: decision.reason } : {}) };
      return refuse(deniedError(call.name, decision.reason ? { by: decision.by, reason: decision.reason } : who));
    }
    record.approval = { decision: 'approved', ...who, ...(decision.note ? { note: decision.note } : {}) };
    if (!decision.args) return record.args;
    const edited = validateToolCall({ id: call.id, name: call.name, args: decision.args }, this.offeredNames());
    if (!edited.ok)
      return refuse({ ...edited.error, message: `the approver's edited arguments: ${edited.error.message}` });
    record.approval.modelArgs = record.args;
    record.args = edited.args;
    return edited.args;
  }

  /** A halt cancelled the call while it ran: recorded as skipped; the rest of the turn is skipped too. */
  toolCancelled(pending: PendingCall): void {
    this.skip(pending, HALTED_WHILE);
  }

  /**
   * The tool activity failed for good. Fatal ends the run; a transient error whose retries ran out
   * becomes execution pain carrying the retry history.
   */
  toolFailed(pending: PendingCall, facts: { error: NormalizedError; retriesExhausted: boolean }): TaskEnd | undefined {
    const { error, retriesExhausted } = facts;
    // An execution error fails its activity (red in the Web UI) but is the same pain as one returned as data.
    if (error.kind === 'execution') {
      this.afterTool(pending, failure(error));
      return undefined;
    }
    if (error.kind === 'fatal') {
      this.lastErrorCode = error.code;
      this.checkpoint.toolCalls.push({ ...pending.record, status: 'failed', error });
      return failed(error);
    }
    this.afterTool(
      pending,
      failure({ ...error, kind: 'execution', suggestion: retryHistory(error, this.config.retry, retriesExhausted) }),
    );
    return undefined;
  }

  /**
   * Record a tool's outcome. `afterToolExecution` runs first, so the pain text sees the counters with
   * this failure in them; its alerts wait for the end of the turn, a lock or a frustration
   * intervention skips the turn's remaining calls.
   */
  afterTool(pending: PendingCall, result: ToolExecutionResult): void {
    const { call, record } = pending;
    const cp = this.checkpoint;
    const verdict = SafetyMonitor.afterToolExecution(this.config.safety, this.counters, {
      toolName: call.name,
      fingerprint: record.fingerprint,
      success: result.success,
    });
    this.counters = verdict.counters;
    let text: string;
    if (result.success && result.message) {
      cp.toolCalls.push(record);
      cp.messages.push(result.message);
      this.turnVerdict(verdict, record);
      return;
    }
    if (result.success) {
      text = toolResultText(result.data);
    } else {
      const error = result.error as NormalizedError;
      this.lastErrorCode = error.code;
      record.status = 'failed';
      record.error = error;
      text = this.guide.interpretPain(error, this.painContext(record));
      cp.injections.push({ tick: record.tick, kind: 'PAIN', text });
      this.record(painEvent(error, this.counters.consecutiveFailures, record.tick));
    }
    cp.toolCalls.push(record);
    cp.messages.push({
      role: 'tool',
      callId: call.id,
      name: call.name,
      text,
      ...(result.success ? {} : { isError: true as const }),
    });
    this.turnVerdict(verdict, record);
  }

  /**
   * The safety verdict of a call for the rest of its turn: alerts wait for its end, a lock or a frustration
   * intervention skips it.
   */
  private turnVerdict(verdict: ReturnType<typeof SafetyMonitor.afterToolExecution>, record: ToolCallRecord): void {
    this.record(...breakerEvents(this.config.safety, verdict, { counters: verdict.counters }));
    for (const alert of verdict.alerts)
      this.turn.alerts.push({ kind: alert.kind, text: this.guide.interpretAlert(alert, this.painContext(record)) });
    if (verdict.lock) {
      this.turn.lock = verdict.lock;
      this.turn.skipReason = `${verdict.lock.reason.code}: the agent was locked before this call started`;
    } else if (verdict.skipRest) {
      this.turn.skipReason = 'frustration intervention: the rest of this turn was skipped';
    }
  }

  /**
   * End the turn: its alerts enter the context after the tool results (so every provider's message
   * order stays valid), frustration first; then a lock suspends the run and a halt cancels it.
   */
  endTurn(): TaskEnd | undefined {
    const { tick, alerts, lock } = this.turn;
    for (const a of frustrationFirst(alerts)) this.inject(tick, a.kind, a.text);
    if (lock) return suspended(lock);
    if (this.halted) return this.cancelled();
    return undefined;
  }

  /** True between the verification question and the model's answer to it. */
  private verifying(): boolean {
    const cp = this.checkpoint;
    const last = cp.injections.at(-1);
    return last?.kind === 'VERIFY' && last.tick === cp.ticks;
  }

  /**
   * What the task's search attributes say (workflows/search-attributes.ts): a closed task drops its
   * state, so `AgentState="SAFETY_LOCKOUT"` never lists tasks of agents unlocked since.
   */
  reported(agentState: AgentState, closed = false, lockReason?: string): Reported {
    const cp = this.checkpoint;
    return {
      agentId: this.input.agentId,
      agentState: closed ? null : agentState,
      tick: cp.ticks,
      tokensUsed: cp.tokensUsed,
      ...(this.lastErrorCode ? { lastErrorCode: this.lastErrorCode } : {}),
      lockReason: lockReason ?? null,
    };
  }

  /** The run was halted: CANCELLED, the agent STOPPED. */
  cancelled(): TaskEnd {
    return {
      outcome: 'CANCELLED',
      agentState: 'STOPPED',
      reason: { code: 'SYSTEM_HALT', message: 'stopped by a human' },
    };
  }

  /**
   * The run's output for `end`: the result (bounded, so a completion never passes Temporal's payload
   * limit), the counters, a SUSPENDED run's checkpoint and the messages the LLM never saw.
   */
  close(end: TaskEnd): TaskRunOutput {
    const { outcome, agentState, error, finalText, lock } = end;
    this.counts.push(...endCounts(outcome, lock));
    const reason = lock?.reason ?? end.reason;
    const result = fitResult(
      {
        ...this.soFar(),
        outcome,
        agentState,
        ...(error ? { error } : {}),
        ...(finalText !== undefined ? { finalText } : {}),
        ...(reason ? { reason } : {}),
        ...(this.store ? { transcript: this.transcript() } : {}),
      },
      LIMITS.taskResultBytes,
    );
    const out: TaskRunOutput = { result, counters: this.counters, runTokens: this.runTokens, ...this.runSpend() };
    if (lock) out.lock = lock;
    // A resumed task sees only the anchored head and the window again, so that is all it carries.
    if (outcome === 'SUSPENDED')
      out.checkpoint = this.store
        ? this.carriedCheckpoint()
        : {
            ...this.checkpoint,
            messages: assembleContext({ messages: this.checkpoint.messages, window: this.config.contextWindow }),
          };
    if (this.inbox.length) out.undelivered = this.inbox.splice(0);
    return out;
  }

  private soFar(): Omit<TaskResult, 'outcome' | 'agentState'> {
    const { agentId, taskId } = this.input;
    const cp = this.checkpoint;
    const omitted = this.omitted.toolCalls || this.omitted.injections ? { omitted: { ...this.omitted } } : {};
    return {
      agentId,
      taskId,
      workflowId: this.workflowId,
      ticks: cp.ticks,
      tokensUsed: cp.tokensUsed,
      ...(cp.cachedInputTokens ? { cachedInputTokens: cp.cachedInputTokens } : {}),
      ...(this.input.price || cp.costUsd !== undefined ? { costUsd: cp.costUsd ?? 0 } : {}),
      toolCalls: cp.toolCalls,
      injections: cp.injections,
      ...omitted,
      ...(this.traceId ? { traceId: this.traceId } : {}),
    };
  }

  /**
   * The next run's input when the task continues as new: the checkpoint (bounded: the context still to
   * send and the newest records), the counters, and what this run had counted, so neither the loop cap,
   * the budget nor the message allowance starts over.
   */
  continuation(): TaskRunInput {
    const checkpoint = this.carriedCheckpoint();
    const { input } = this;
    const continued: Continued = {
      runTokens: this.runTokens,
      ...this.runSpend(),
      allowanceStart: this.allowanceStart,
      received: this.received,
      omitted: { ...this.omitted },
      ...this.lastError(),
    };
    const { messages: _pending, ...rest } = input;
    const messages = this.inbox.splice(0);
    return {
      ...rest,
      counters: this.counters,
      checkpoint,
      continued,
      ...(messages.length ? { messages } : {}),
      ...(this.tools ? { tools: this.tools } : {}),
    };
  }

  /**
   * What the transcript store holds of this run (store mode): the manifest of the last call's context
   * with its answer, and the entries after it. `starry logs --transcript` resolves it.
   */
  transcript(): NonNullable<TaskResult['transcript']> {
    const cp = this.checkpoint;
    type Tail = NonNullable<TaskResult['transcript']>['tail'];
    const tail = cp.messages.slice(cp.sent?.to ?? 0) as unknown as Tail;
    return { ...(cp.sent ? { manifest: cp.sent.ref } : {}), tail };
  }

  /**
   * The checkpoint with its oldest records dropped (counted in `omitted`) and long strings cut, so what
   * a run hands on stays far below the payload limit; the messages are already bounded.
   */
  private carriedCheckpoint(): TaskCheckpoint {
    const cp = this.checkpoint;
    const toolCalls = cutStrings(cp.toolCalls.slice(-CARRIED_RECORDS)) as ToolCallRecord[];
    const injections = cutStrings(cp.injections.slice(-CARRIED_RECORDS)) as Injection[];
    this.omitted = {
      toolCalls: this.omitted.toolCalls + cp.toolCalls.length - toolCalls.length,
      injections: this.omitted.injections + cp.injections.length - injections.length,
    };
    cp.toolCalls = toolCalls;
    cp.injections = injections;
    return { ...cp, messages: [...cp.messages] };
  }

  /** Estimated tokens the limits leave after the anchored head. */
  private roomAfterHead(): number {
    const limits = this.limits();
    return limits.maxTokens - entriesTokens(this.checkpoint.messages.slice(0, ANCHORED), limits.bytesPerToken);
  }

  private limits(): WindowLimits {
    const { contextWindow, contextTokens } = this.config;
    return {
      maxMessages: contextWindow,
      maxTokens: contextTokens ?? Number.MAX_SAFE_INTEGER,
      bytesPerToken: this.checkpoint.bytesPerToken ?? DEFAULT_BYTES_PER_TOKEN,
      anchored: ANCHORED,
    };
  }

  /**
   * Characters each result of a turn of `calls` calls may keep in the context (store mode: the tool activity cuts it).
   */
  resultChars(calls = 1): number {
    return resultChars(this.checkpoint.messages.slice(0, ANCHORED), this.limits(), MAX_RESULT_CHARS, calls);
  }

  /**
   * The next call's context as a delta: the base (the last call's manifest, its answer included) less
   * what the window no longer holds, plus what came after it. The first call sends the head and the tools.
   */
  private contextDelta(strategy: ContextStrategy): ContextDelta {
    const cp = this.checkpoint;
    const sent = cp.sent;
    // The window only moves forward: what the base dropped is not sent again (checkedPlan).
    const { start } = this.planned ?? this.plan(strategy);
    this.planned = undefined;
    this.windowFrom = start;
    const summary = cp.summary && !cp.summary.sent ? { summary: storedSummary(cp.summary) } : {};
    if (!sent) return { head: cp.messages.slice(0, ANCHORED), drop: 0, append: cp.messages.slice(start), ...summary };
    return { base: sent.ref, drop: start - sent.from, append: cp.messages.slice(sent.to), ...summary };
  }

  /** The config's context strategy, or the error that fails the task when this worker has none by that id. */
  private contextStrategy(): ContextStrategy | NormalizedError {
    const id = this.config.context?.strategy ?? DEFAULT_CONTEXT_STRATEGY;
    try {
      return getContextStrategy(id);
    } catch (err) {
      return normalizedError({
        code: 'EINVAL',
        kind: 'execution',
        source: 'context strategy',
        message: err instanceof Error ? err.message : String(err),
        suggestion: 'Submit the task with a context.strategy this worker registers, or run it on a worker that has it.',
      });
    }
  }

  /**
   * The strategy's plan for the next call (store mode): what it sees is the head (with the summary in
   * effect, when there is one) and every entry since the last call's window opened.
   */
  private plan(strategy: ContextStrategy): Required<ContextPlan> {
    const cp = this.checkpoint;
    const summary = cp.summary ? [cp.summary.message] : [];
    const view: ContextView = {
      entries: [...cp.messages.slice(0, ANCHORED), ...summary, ...cp.messages.slice(ANCHORED)],
      limits: { ...this.limits(), anchored: ANCHORED + summary.length } as Required<WindowLimits>,
      ...(cp.sent ? { previousStart: cp.sent.from + summary.length } : {}),
    };
    const plan = checkedPlan(strategy.plan(view), view);
    return { start: plan.start - summary.length, summarize: plan.summarize };
  }

  /**
   * The summary call this tick needs before its LLM call (store mode, a strategy that summarizes, when
   * its window drops turns and the budget has tokens left), or undefined. The workflow runs the
   * summarize activity, then tells `summarized` or `summaryFailed`.
   */
  summaryDue(): SummaryInput | undefined {
    if (!this.store) return undefined;
    const strategy = this.contextStrategy();
    if (!('plan' in strategy)) return undefined;
    const { config, input } = this;
    const cp = this.checkpoint;
    this.planned = this.plan(strategy);
    if (!this.planned.summarize) return undefined;
    // Without a price the cost budget cannot weigh it: the tick's own call then fails, saying so.
    if (config.safety.costBudgetUsd !== undefined && !input.price) return undefined;
    const budget = SafetyMonitor.beforeLLMCall(config.safety, this.usage());
    if (budget.lock) return undefined;
    const from = cp.sent?.from ?? ANCHORED;
    const entries = cp.messages.slice(from, this.planned.start);
    const trimmed = cp.trimmed ?? { entries: 0, calls: 0 };
    const calls = trimmed.calls + entries.filter((m) => m.role === 'assistant').length;
    const previous = cp.summary ? { previous: storedSummary(cp.summary) } : {};
    return {
      llm: config.llm,
      agentId: input.agentId,
      taskId: input.taskId,
      tick: cp.ticks,
      callNumber: cp.callNumber + 1,
      entries,
      ...previous,
      covers: {
        entries: [cp.summary?.covers.entries[0] ?? from + trimmed.entries, this.planned.start + trimmed.entries],
        calls: [cp.summary?.covers.calls[0] ?? trimmed.calls + 1, calls],
      },
      // At most a quarter of the room after the head: with the half the window keeps, the call still fits.
      maxOutputTokens: Math.max(
        1,
        Math.min(budget.maxOutputTokens, SUMMARY_MAX_TOKENS, Math.floor(this.roomAfterHead() / SUMMARY_SHARE)),
      ),
      maxRetryDelayMs: config.retry.maximumIntervalMs,
    };
  }

  /**
   * The summary is written: it replaces the dropped turns (and any earlier summary) in the next call's
   * context, its tokens count like any call's, and the task's injections record it.
   */
  summarized(response: SummaryResponse): void {
    const cp = this.checkpoint;
    this.spent(response.usage);
    cp.summary = { ...response.summary };
    const [from, to] = response.summary.covers.calls;
    cp.injections.push({ tick: cp.ticks, kind: 'SUMMARY', text: `Summary of calls ${from}–${to}: ${response.text}` });
  }

  /**
   * The summary call failed for good: the window drops the turns without one (as `prefix` does), and the
   * task's injections say so. The task goes on.
   */
  summaryFailed(error: NormalizedError, request: SummaryInput): void {
    const [from, to] = request.covers.calls;
    this.checkpoint.injections.push({
      tick: this.checkpoint.ticks,
      kind: 'SUMMARY',
      text: `No summary of calls ${from}–${to}: the summary call failed (${error.code}: ${error.message}); they left the context without one.`,
    });
  }

  /**
   * The call's context is stored (its manifest holds the window and the answer): the workflow keeps only
   * the head and that window, so its memory and what it carries stay bounded however long the task.
   */
  private sent(context: { ref: string; sentBytes: number }, inputTokens: number): void {
    const cp = this.checkpoint;
    cp.bytesPerToken = calibrate(context.sentBytes, inputTokens, cp.bytesPerToken ?? DEFAULT_BYTES_PER_TOKEN);
    const from = this.windowFrom;
    const left = cp.messages.slice(ANCHORED, from);
    if (left.length) {
      const trimmed = cp.trimmed ?? { entries: 0, calls: 0 };
      cp.trimmed = {
        entries: trimmed.entries + left.length,
        calls: trimmed.calls + left.filter((m) => m.role === 'assistant').length,
      };
    }
    if (cp.summary) cp.summary.sent = true;
    cp.messages = [...cp.messages.slice(0, ANCHORED), ...cp.messages.slice(from)];
    cp.sent = { ref: context.ref, from: ANCHORED, to: cp.messages.length };
  }

  /** A call's usage counted: its tokens, its cached input tokens, and with a price its cost (run and task). */
  private spent(usage: TokenUsage): void {
    const cp = this.checkpoint;
    const used = usage.inputTokens + usage.outputTokens;
    this.runTokens += used;
    cp.tokensUsed += used;
    if (usage.cachedInputTokens) {
      this.runCachedInputTokens += usage.cachedInputTokens;
      cp.cachedInputTokens = (cp.cachedInputTokens ?? 0) + usage.cachedInputTokens;
    }
    const { price } = this.input;
    if (price) {
      const cost = costUsd(usage, price);
      this.runCostUsd = roundUsd(this.runCostUsd + cost);
      cp.costUsd = roundUsd((cp.costUsd ?? 0) + cost);
    }
  }

  /** This run's cached input tokens and cost, each when there is some. */
  private runSpend(): Pick<TaskRunOutput, 'runCachedInputTokens' | 'runCostUsd'> {
    return {
      ...(this.runCachedInputTokens ? { runCachedInputTokens: this.runCachedInputTokens } : {}),
      ...(this.runCostUsd ? { runCostUsd: this.runCostUsd } : {}),
    };
  }

  private lastError(): { lastErrorCode?: string } {
    return this.lastErrorCode ? { lastErrorCode: this.lastErrorCode } : {};
  }

  /** A call that did not run: recorded as skipped, its tool result says why. */
  private skip(pending: PendingCall, reason: string): void {
    const { call, record } = pending;
    this.checkpoint.toolCalls.push({
      ...record,
      status: 'skipped',
      error: normalizedError({ code: 'E_SKIPPED', kind: 'execution', source: call.name, message: reason }),
    });
    this.checkpoint.messages.push({ role: 'tool', callId: call.id, name: call.name, text: skippedText(reason) });
  }

  /** A breaker before a step locked the run: its event, and the run suspended. */
  private tripped(lock: LockVerdict, facts: BreakerFacts): TaskEnd {
    this.record(...breakerEvents(this.config.safety, { lock }, facts));
    return suspended(lock);
  }

  private painContext(record: ToolCallRecord): PainContext {
    return {
      tick: record.tick,
      toolName: record.name,
      args: record.args,
      consecutiveFailures: this.counters.consecutiveFailures,
      workspace: this.config.workspace,
      tools: this.offeredNames(),
    };
  }

  private inject(tick: number, kind: Injection['kind'], text: string): void {
    this.checkpoint.injections.push({ tick, kind, text });
    this.checkpoint.messages.push({ role: 'user', text });
  }
}

/** A summary as a delta or a summary request carries it (without the checkpoint's bookkeeping). */
function storedSummary(s: NonNullable<TaskCheckpoint['summary']>): StoredSummary {
  const { sent: _sent, ...summary } = s;
  return summary;
}

/** A breaker stopped the run: SUSPENDED, the agent in the lock's state. */
function suspended(lock: LockVerdict): TaskEnd {
  return { outcome: 'SUSPENDED', agentState: lock.agentState, lock };
}

/** The run failed: a fatal error also pauses the agent (FATAL, alert); any other leaves it waiting. */
function failed(error: NormalizedError): TaskEnd {
  return error.kind === 'fatal'
    ? { outcome: 'FAILED', agentState: 'ERROR_PAUSED', error, lock: fatalLock(error) }
    : { outcome: 'FAILED', agentState: 'WAITING_FOR_EVENT', error };
}
