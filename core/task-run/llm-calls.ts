/**
 * The LLM calls of a tick (seeds: `beforeLLMCall`, the token and cost budgets): the tick's call, its
 * context from the context window and its output capped by the budget, which may refuse it; and the
 * summary call before it when the `summarize` strategy's window drops turns and the budget has room.
 */
import type { NormalizedError } from '../errors';
import type { LlmCallInput, SummaryInput, ToolSpec } from '../llm';
import type { LockVerdict } from '../safety-monitor';
import type { UsageInput } from '../safety-rungs';
import type { TaskCheckpoint } from '../types';
import type { ContextWindow } from './context-window';
import type { TaskRunInput } from './io';
import { offeredSpecs } from './offer';
import { unpriced, unpricedError, type Spend } from './spend';
import { summaryRequest } from './summary';

/** What the calls read of the run. */
export interface CallParts {
  input: TaskRunInput;
  checkpoint: TaskCheckpoint;
  spend: Spend;
  window: ContextWindow;
  /** The tools the worker listed for the task (absent: the built-in ones). */
  tools: ToolSpec[] | undefined;
}

/** The tick's call, or why it does not start: an error that fails the task, or the budget's lock and what it weighed. */
export type CallStep =
  { request: LlmCallInput } | { error: NormalizedError } | { lock: LockVerdict; usage: UsageInput };

/**
 * The tick's LLM request: the context with the system prompt and goal anchored, checked against the
 * payload limit, and the budget (`beforeLLMCall`, which also caps the output tokens). Counts the call.
 */
export function llmRequest(run: CallParts): CallStep {
  const { config, agentId, taskId, price } = run.input;
  const cp = run.checkpoint;
  // The submit check refuses this; a task picked up by a worker without the price still must not spend unchecked.
  if (unpriced(config, price)) return { error: unpricedError(config) };
  const { usage, budget } = run.spend.beforeCall(config.safety, run.input);
  const got = run.window.callContext(cp, config, offeredSpecs(run.tools, config));
  if ('error' in got) return got;
  if (budget.lock) return { lock: budget.lock, usage };
  return {
    request: {
      llm: config.llm,
      agentId,
      taskId,
      callNumber: ++cp.callNumber,
      tick: cp.ticks,
      ...got.context,
      maxOutputTokens: budget.maxOutputTokens,
      maxRetryDelayMs: config.retry.maximumIntervalMs,
    },
  };
}

/**
 * The summary call this tick needs before its LLM call (store mode, a strategy that summarizes, when
 * its window drops turns and the budget has tokens left), or undefined. The workflow runs the
 * summarize activity, then tells `summarized` or `summaryFailed`.
 */
export function summaryDue(run: CallParts): SummaryInput | undefined {
  const { config, price } = run.input;
  const cp = run.checkpoint;
  const planned = run.window.summaryPlan(cp, config);
  // Without a price the cost budget cannot weigh it: the tick's own call then fails, saying so.
  if (!planned || unpriced(config, price)) return undefined;
  const { budget } = run.spend.beforeCall(config.safety, run.input);
  if (budget.lock) return undefined;
  const roomAfterHead = run.window.roomAfterHead(cp, config);
  const facts = { config, input: run.input, planned, maxOutputTokens: budget.maxOutputTokens, roomAfterHead };
  return summaryRequest(cp, facts);
}

/** About how many tokens the call `llmRequest` just built sends: a shared budget's lease must cover them and the output cap. */
export function inputEstimate(run: CallParts): number {
  const { config } = run.input;
  return run.window.inputEstimate(run.checkpoint, config, offeredSpecs(run.tools, config));
}
