/**
 * What a task run takes and gives (docs/ARCHITECTURE.md#workflows): the task workflow's input and output,
 * what a run carries into the next when the task continues as new, how a run ends, and what each step
 * asks of the workflow. Types only, shared by `TaskRun` (core/task-run.ts) and its collaborators.
 */
import type { ApprovalRules } from '../approval';
import type { HeldLease } from '../budget';
import type { AgentConfig } from '../config';
import type { NormalizedError } from '../errors';
import type { LlmToolCall, ToolSpec } from '../llm';
import type { HumanMessage } from '../payloads';
import type { Price } from '../pricing';
import type { LockVerdict, SafetyCounters } from '../safety-monitor';
import type { AgentState, LockReason, TaskCheckpoint, TaskOutcome, TaskResult, ToolCallRecord } from '../types';

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

/** A call's id within its task: its tick and its index in the turn (also the tool activity's call id). */
export function callIdOf(tick: number, index: number): string {
  return `t${tick}.${index}`;
}
