/**
 * One task run's bookkeeping (docs/ARCHITECTURE.md#workflows): the transcript, the counters, the turn's
 * skip reasons and alerts, and how the run ends. Pure, like `AgentEntity` for the agent: the task
 * workflow (`workflows/task.ts`) calls one named step per part of the tick and performs what it is told
 * (the LLM and tool activities, the reports), so every rule of the loop is here and unit-tested.
 *
 * A tick: `startTick` → `llmCall` → the LLM activity → `llmAnswered` (or `llmFailed`) → per tool call
 * `beforeTool` → the tool activity → `afterTool` (or `toolCancelled` / `toolFailed`) → `endTurn`. Any step
 * may return a `TaskEnd`; `close` turns it into the run's output.
 *
 * `TaskRun` is the facade; each concern is a collaborator over plain data in core/task-run/ (the spend,
 * the counters, the inbox, the context window and its summary, the tick's LLM calls, the turn and its
 * approval book, the final answer, the telemetry buffer, the reports and the output), all held in the
 * run's books (core/task-run/books.ts), which each step is handed.
 */
import type { ApprovalDecision, ApprovalRules, PendingApproval } from './approval';
import type { TaskStatus } from './contract';
import type { NormalizedError, ToolExecutionResult } from './errors';
import type { LlmCallInput, LlmResponse, LlmToolCall, SummaryInput, SummaryResponse, ToolSpec } from './llm';
import type { TaskProgress } from './payloads';
import type { Price } from './pricing';
import type { LockVerdict, SafetyCounters } from './safety-monitor';
import {
  approvalAskedEvent,
  breakerEvents,
  endCounts,
  haltEvent,
  tickCount,
  type BreakerFacts,
  type MetricCount,
  type TelemetryEvent,
} from './telemetry';
import type { AgentState, Reported, TaskCheckpoint, TaskOutcome, TaskResult } from './types';
import { ApprovalBook } from './task-run/approval-book';
import { booksOf, type RunBooks } from './task-run/books';
import { inject } from './task-run/checkpoint';
import { cancelled, failed, suspended } from './task-run/ends';
import { messageText } from './task-run/inbox';
import type {
  AnswerStep,
  PendingCall,
  TaskEnd,
  TaskRunInput,
  TaskRunOptions,
  TaskRunOutput,
  ToolStep,
} from './task-run/io';
import * as llmCalls from './task-run/llm-calls';
import { offeredNames, offeredPrompt } from './task-run/offer';
import * as output from './task-run/output';
import * as reports from './task-run/reports';
import { summaryFailed, summaryWritten } from './task-run/summary';
import { Turn } from './task-run/turn';
import { finalAnswer } from './task-run/verify';

export { CARRIED_RECORDS } from './task-run/checkpoint';
export { PROGRESS_EVERY_TICKS } from './task-run/reports';
export * from './task-run/io';

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
  /** The run's collaborators and the facts they read: one object for the whole run, handed to each step. */
  private readonly books: RunBooks;
  private turn = new Turn();
  private approvals = new ApprovalBook();

  constructor(
    readonly input: TaskRunInput,
    readonly workflowId: string,
    opts: TaskRunOptions = {},
  ) {
    this.books = booksOf(input, workflowId, opts.store ?? false);
    this.checkpoint = this.books.checkpoint;
  }

  /** SYSTEM_HALT arrived (`halt`): no further call starts. */
  get halted(): boolean {
    return this.books.halted;
  }
  /** The task's trace, when its worker traces: in its details, so a person goes from the Web UI to it. */
  get traceId(): string | undefined {
    return this.books.traceId;
  }
  set traceId(id: string | undefined) {
    this.books.traceId = id;
  }
  /** The breaker counters, this run's outcomes included. */
  get counters(): SafetyCounters {
    return this.books.counters.data.counters;
  }
  get lastErrorCode(): string | undefined {
    return this.books.counters.data.lastErrorCode;
  }
  /** Tokens this run has used, the cached input tokens among them, and what they cost in USD. */
  get runTokens(): number {
    return this.books.spend.data.runTokens;
  }
  get runCachedInputTokens(): number {
    return this.books.spend.data.runCachedInputTokens;
  }
  get runCostUsd(): number {
    return this.books.spend.data.runCostUsd;
  }

  /** The tools the worker listed for this task: offered from the first LLM call on (a new task's prompt names them). */
  offer(tools: ToolSpec[], shellAllow?: string[], workerApproval?: ApprovalRules): void {
    this.books.tools = tools;
    this.books.offered = offeredNames(tools, this.input.config);
    if (workerApproval) this.input.workerApproval = workerApproval;
    if (!this.input.checkpoint && this.checkpoint.callNumber === 0)
      this.checkpoint.messages[0] = offeredPrompt(this.books.guide, this.input.config, tools, shellAllow);
  }

  /** The price of the task's model, as it learnt it at its start (carried from then on): its calls cost from the first on. */
  priced(price: Price | undefined): void {
    if (price) this.input.price = price;
    else delete this.input.price;
  }

  /** The task could not start: the worker could not list its tools (an MCP server that does not start). */
  setupFailed(error: NormalizedError): TaskEnd {
    this.books.counters.failedWith(error.code);
    return failed(error);
  }

  /** SYSTEM_HALT arrived: no further call starts. */
  halt(): void {
    if (!this.halted) this.books.telemetry.record(haltEvent(this.checkpoint.ticks));
    this.books.halted = true;
  }

  /** The trace's facts since the last call (pain, breakers, halt, approvals), oldest first: the workflow adds them to the task's span. */
  drainEvents(): TelemetryEvent[] {
    return this.books.telemetry.drainEvents();
  }

  /** The counter additions since the last call (ticks, pain, trips, halts, the end): the workflow adds them to the worker's metrics. */
  drainCounts(): MetricCount[] {
    return this.books.telemetry.drainCounts();
  }

  /** A human message for the next tick, checked and bounded per run. Returns why it was ignored, or undefined. */
  receive(raw: unknown): string | undefined {
    return this.books.inbox.receive(raw);
  }

  // What it reports (core/task-run/reports.ts): the state query, the agent's progress, the Web UI's details, the search attributes.
  status(): TaskStatus {
    return reports.status(this.books);
  }
  progressDue(): boolean {
    return reports.progressDue(this.checkpoint);
  }
  progress(): TaskProgress {
    return reports.progress(this.books);
  }
  details(agentState: AgentState, lockReason?: string, outcome?: TaskOutcome): string {
    return reports.details(this.books, this.approvals.waiting(), { agentState, lockReason, outcome });
  }
  reported(agentState: AgentState, closed = false, lockReason?: string): Reported {
    return reports.reported(this.books, agentState, closed, lockReason);
  }

  /** Start a tick: a halt, the loop cap and Temporal's history limits end the run; else the waiting messages enter the context. */
  startTick(history: { events: number; bytes: number }): TaskEnd | undefined {
    if (this.halted) return cancelled();
    const stop = this.books.counters.tickLock(this.checkpoint, this.input.config.safety, history);
    if (stop) return this.tripped(stop.lock, stop.facts);
    const tick = ++this.checkpoint.ticks;
    this.books.telemetry.count(tickCount());
    for (const m of this.books.inbox.take()) inject(this.checkpoint, tick, 'MESSAGE', messageText(m));
    return undefined;
  }

  /** The tick's LLM request: the context (anchored head, checked against the payload limit) and the budget, which caps the output. */
  llmCall(): { end: TaskEnd } | { request: LlmCallInput } {
    const step = llmCalls.llmRequest(this.books);
    if ('lock' in step) return { end: this.tripped(step.lock, step.usage) };
    return 'error' in step ? { end: failed(step.error) } : step;
  }

  /** About how many tokens the call `llmCall` just built sends: a shared budget's lease must cover them and the output cap. */
  inputEstimate(): number {
    return llmCalls.inputEstimate(this.books);
  }

  /** A lock from outside the run's own rungs (the shared budget refused a lease): its event, the run suspended. */
  lockedBy(lock: LockVerdict): TaskEnd {
    return this.tripped(lock, { tokensUsed: this.books.spend.agentTokens(this.input) });
  }

  /** The LLM call failed for good: the task fails (the controller cannot feel pain about itself); a fatal error pauses the agent. */
  llmFailed(error: NormalizedError): TaskEnd {
    this.books.counters.failedWith(error.code);
    return failed(error);
  }

  /** The model answered: its tokens counted, its turn kept; no tool call is the final answer, after one verification round when configured. */
  llmAnswered(response: LlmResponse): AnswerStep {
    const cp = this.checkpoint;
    this.books.spend.add(response.usage, this.input.price, cp);
    this.books.window.answered(cp, response);
    if (response.toolCalls.length === 0) return finalAnswer(cp, this.input, response.text);
    this.turn = Turn.at(cp.ticks);
    this.approvals = new ApprovalBook();
    return { calls: response.toolCalls };
  }

  /** Before the `index`-th tool call of the turn: skipped, refused as pain, denied, or run with its checked (or approved) arguments. */
  beforeTool(call: LlmToolCall, index?: number): ToolStep {
    return this.turn.before(this.books, call, { halted: this.halted, approvals: this.approvals, index });
  }

  /** Which of the turn's calls wait for a human before any of them runs (`tools.approval` and the worker's rules). */
  askApprovals(calls: readonly LlmToolCall[], nowMs: number): PendingApproval[] {
    const asked = this.approvals.ask(calls, this.books, { tick: this.turn.data.tick, nowMs });
    for (const p of asked) this.books.telemetry.trace(approvalAskedEvent(p));
    return asked;
  }

  // The turn's approval book (core/task-run/approval-book.ts): the calls that wait, the time left, the decisions, the expiry.
  waitingApprovals(): PendingApproval[] {
    return this.approvals.waiting();
  }
  approvalTimeLeft(nowMs: number): number {
    return this.approvals.timeLeft(nowMs);
  }
  decide(decision: ApprovalDecision): string | undefined {
    return this.approvals.decide(decision);
  }
  expireApprovals(nowMs: number): void {
    this.approvals.expire(nowMs);
  }

  // The turn's tool steps (core/task-run/turn.ts): a call a halt cancelled, one that failed for good, a result; the turn's end.
  toolCancelled(pending: PendingCall): void {
    this.turn.cancelled(this.books, pending);
  }
  toolFailed(pending: PendingCall, facts: { error: NormalizedError; retriesExhausted: boolean }): TaskEnd | undefined {
    return this.turn.failed(this.books, pending, facts);
  }
  afterTool(pending: PendingCall, result: ToolExecutionResult): void {
    this.turn.after(this.books, pending, result);
  }
  endTurn(): TaskEnd | undefined {
    return this.turn.end(this.checkpoint, this.halted);
  }

  /** The run was halted: CANCELLED, the agent STOPPED. */
  cancelled(): TaskEnd {
    return cancelled();
  }

  /** The run's output for `end`: the bounded result, the counters, a SUSPENDED run's checkpoint, the undelivered messages. */
  close(end: TaskEnd): TaskRunOutput {
    this.books.telemetry.count(...endCounts(end.outcome, end.lock));
    return output.closed(this.books, end);
  }

  /** The next run's input when the task continues as new: the bounded checkpoint and everything this run counted. */
  continuation(): TaskRunInput {
    return output.continuation(this.books);
  }

  /** What the transcript store holds of this run (store mode): the last call's manifest and the entries after it. */
  transcript(): NonNullable<TaskResult['transcript']> {
    return output.transcript(this.checkpoint);
  }

  /** Characters each result of a turn of `calls` calls may keep in the context (store mode: the tool activity cuts it). */
  resultChars(calls = 1): number {
    return this.books.window.resultChars(this.checkpoint, this.input.config, calls);
  }

  /** The summary call this tick needs before its LLM call (`summarize`, its window drops turns, the budget has room), or undefined. */
  summaryDue(): SummaryInput | undefined {
    return llmCalls.summaryDue(this.books);
  }

  /** The summary is written: it replaces the dropped turns in the next call's context; its tokens count like any call's. */
  summarized(response: SummaryResponse): void {
    this.books.spend.add(response.usage, this.input.price, this.checkpoint);
    summaryWritten(this.checkpoint, response);
  }

  /** The summary call failed for good: the window drops the turns without one, the injections say so; the task goes on. */
  summaryFailed(error: NormalizedError, request: SummaryInput): void {
    summaryFailed(this.checkpoint, error, request);
  }

  /** A breaker before a step locked the run: its event, and the run suspended. */
  private tripped(lock: LockVerdict, facts: BreakerFacts): TaskEnd {
    this.books.telemetry.record(...breakerEvents(this.input.config.safety, { lock }, facts));
    return suspended(lock);
  }
}
