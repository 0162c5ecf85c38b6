/**
 * The task loop's hook points (docs/ARCHITECTURE.md, "The loop and its hooks"). The loop
 * (workflows/task.ts) is the seeds' tick — context, LLM, tools, pain, breakers, verify — and calls every
 * concern around it at fixed points, as Temporal's interceptors and the Vercel AI SDK's `prepareStep`
 * do: the shared budget's lease, human approvals, the summary call, telemetry, the tool queue, the
 * reruns after a lost worker, the progress reports. A concern is one module that returns a `TaskHook`;
 * adding one is adding a module to `TASK_HOOKS` (workflows/task/index.ts), not editing the loop.
 *
 * Hooks run in the order they are listed; an `around` hook wraps the ones after it, the first
 * outermost. Workflow code: every hook is deterministic, and the order of the commands they issue is
 * the history's.
 */
import type { ActivityOptions } from '@temporalio/workflow';
import type { ListedTools, ListToolsRequest } from '../../activities/tools';
import type { NormalizedError } from '../../core/errors';
import type { LlmCallInput, LlmResponse, LlmToolCall, TokenUsage } from '../../core/llm';
import type { TaskEnd, TaskRunInput, TaskRunOutput } from '../../core/task-run';
import type { TaskScope } from './scope';

/** One tool call as the loop runs it: the model's call, its index in the turn, its id and span name. */
export interface ToolCallInfo {
  call: LlmToolCall;
  index: number;
  callId: string;
  tick: number;
}

/** How a tool call went, as the loop recorded it: the task's end if it ends, the activity's failure if any. */
export interface ToolOutcome {
  end?: TaskEnd;
  failure?: unknown;
}

/** The facts of a failed activity (workflows/activity-facts.ts `factsOf`). */
export interface Facts {
  error: NormalizedError;
  retriesExhausted: boolean;
}

/** One concern of the loop at the points it needs; every member optional. */
export interface TaskHook {
  /** What it is, for the docs and the logs. */
  readonly name: string;
  /** Around every activity call of the task (what, e.g. `llm · tick 3`): a lost worker's call runs again. */
  activity?<T>(t: TaskScope, what: string, call: () => Promise<T>): Promise<T>;
  /**
   * The workflow worker listed the task's tools: a concern may take the list from elsewhere (a tool
   * worker, when the tools have a task queue of their own).
   */
  toolsListed?(t: TaskScope, listed: ListedTools, request: ListToolsRequest): Promise<ListedTools | undefined>;
  /** Around the whole run of ticks (the task's span). */
  task?(t: TaskScope, run: () => Promise<TaskRunOutput>): Promise<TaskRunOutput>;
  /** Before a tick is counted: the task may continue as new here (it throws `ContinueAsNew`). */
  beforeTick?(t: TaskScope): Promise<void>;
  /** The tick is counted: work before its LLM call (a summary); may end the task. */
  tickStarted?(t: TaskScope): Promise<TaskEnd | undefined>;
  /** Before the tick's LLM call: may lower its output cap, or end the task (a budget refused). */
  beforeLlmCall?(t: TaskScope, request: LlmCallInput): Promise<TaskEnd | undefined>;
  /** Around the LLM activity (its span). */
  llmCall?(t: TaskScope, request: LlmCallInput, call: () => Promise<LlmResponse>): Promise<LlmResponse>;
  /** A call's tokens were spent: the tick's LLM call, or a summary's. */
  spent?(t: TaskScope, usage: TokenUsage): void;
  /** Before the turn's tool calls run: they may wait here (for a human's approval). */
  beforeToolCalls?(t: TaskScope, calls: readonly LlmToolCall[]): Promise<void>;
  /** The activity options of a tool call (or of the tool listing): where it runs, how long it may wait. */
  toolOptions?(t: TaskScope, options: ActivityOptions, listing: boolean): ActivityOptions;
  /** Around one tool call (its span); `call` runs it and records its outcome in the run. */
  toolCall?(t: TaskScope, info: ToolCallInfo, call: () => Promise<ToolOutcome>): Promise<ToolOutcome>;
  /** What a tool activity's failure means, when this concern knows better (no tool worker picked it up). */
  toolFailure?(t: TaskScope, err: unknown, source: string): Facts | undefined;
  /** The tick ended: after its turn, or after the verification question. */
  tickEnded?(t: TaskScope): void;
  /** The task ends with `end`: before its output is made (the span's outcome). */
  ending?(t: TaskScope, end: TaskEnd): void;
  /** The task's output is made (any outcome but continue-as-new): give back what it holds (a lease). */
  ended?(t: TaskScope): Promise<void>;
  /** What the next run takes over when the task continues as new. */
  carried?(t: TaskScope): Partial<TaskRunInput>;
}

/** The hooks of one task, in their order, called at each point. */
export class Hooks {
  constructor(private readonly hooks: readonly TaskHook[]) {}

  activity<T>(t: TaskScope, what: string, call: () => Promise<T>): Promise<T> {
    return this.hooks.reduceRight<() => Promise<T>>(
      (next, h) => (h.activity ? () => h.activity!(t, what, next) : next),
      call,
    )();
  }

  async toolsListed(t: TaskScope, listed: ListedTools, request: ListToolsRequest): Promise<ListedTools> {
    let tools = listed;
    for (const h of this.hooks) tools = (await h.toolsListed?.(t, tools, request)) ?? tools;
    return tools;
  }

  task(t: TaskScope, run: () => Promise<TaskRunOutput>): Promise<TaskRunOutput> {
    return this.hooks.reduceRight<() => Promise<TaskRunOutput>>(
      (next, h) => (h.task ? () => h.task!(t, next) : next),
      run,
    )();
  }

  async beforeTick(t: TaskScope): Promise<void> {
    for (const h of this.hooks) await h.beforeTick?.(t);
  }

  async tickStarted(t: TaskScope): Promise<TaskEnd | undefined> {
    for (const h of this.hooks) {
      const end = await h.tickStarted?.(t);
      if (end) return end;
    }
    return undefined;
  }

  async beforeLlmCall(t: TaskScope, request: LlmCallInput): Promise<TaskEnd | undefined> {
    for (const h of this.hooks) {
      const end = await h.beforeLlmCall?.(t, request);
      if (end) return end;
    }
    return undefined;
  }

  llmCall(t: TaskScope, request: LlmCallInput, call: () => Promise<LlmResponse>): Promise<LlmResponse> {
    return this.hooks.reduceRight<() => Promise<LlmResponse>>(
      (next, h) => (h.llmCall ? () => h.llmCall!(t, request, next) : next),
      call,
    )();
  }

  spent(t: TaskScope, usage: TokenUsage): void {
    for (const h of this.hooks) h.spent?.(t, usage);
  }

  async beforeToolCalls(t: TaskScope, calls: readonly LlmToolCall[]): Promise<void> {
    for (const h of this.hooks) await h.beforeToolCalls?.(t, calls);
  }

  toolOptions(t: TaskScope, options: ActivityOptions, listing = false): ActivityOptions {
    return this.hooks.reduce((o, h) => h.toolOptions?.(t, o, listing) ?? o, options);
  }

  toolCall(t: TaskScope, info: ToolCallInfo, call: () => Promise<ToolOutcome>): Promise<ToolOutcome> {
    return this.hooks.reduceRight<() => Promise<ToolOutcome>>(
      (next, h) => (h.toolCall ? () => h.toolCall!(t, info, next) : next),
      call,
    )();
  }

  toolFailure(t: TaskScope, err: unknown, source: string): Facts | undefined {
    for (const h of this.hooks) {
      const facts = h.toolFailure?.(t, err, source);
      if (facts) return facts;
    }
    return undefined;
  }

  tickEnded(t: TaskScope): void {
    for (const h of this.hooks) h.tickEnded?.(t);
  }

  ending(t: TaskScope, end: TaskEnd): void {
    for (const h of this.hooks) h.ending?.(t, end);
  }

  async ended(t: TaskScope): Promise<void> {
    for (const h of this.hooks) await h.ended?.(t);
  }

  carried(t: TaskScope): Partial<TaskRunInput> {
    return Object.assign({}, ...this.hooks.map((h) => h.carried?.(t) ?? {})) as Partial<TaskRunInput>;
  }
}
