/**
 * What an agent has spent and what its breakers count (docs/ARCHITECTURE.md#workflows): its tokens (the
 * cached ones among them) and cost across tasks, the breaker counters its tasks carry on, and its last
 * error code. A run's spend is added when it ends; until then the running task's progress reports count.
 * Plain data in the agent's `AgentData`; the functions change the part they are given.
 */
import type { AgentConfig } from '../config';
import type { AgentStatus } from '../contract';
import { roundUsd } from '../pricing';
import { initialCounters, type SafetyCounters } from '../safety-counters';
import type { TaskRunOutput } from '../task-run';
import type { LockReason } from '../types';
import type { ProgressReport, RunningTask } from './runs';

/** The agent's spend and counters. */
export interface UsageData {
  tokensUsed: number;
  /** Of the input tokens in `tokensUsed`, those read from the provider's cache (absent while none were). */
  cachedInputTokens?: number;
  /** What the agent's LLM calls cost in USD, by the prices its tasks had (absent while none had one). */
  costUsd?: number;
  counters: SafetyCounters;
  lastErrorCode?: string;
}

/** A run ended: its tokens and cost added to the agent's, its counters carried on, its last call's error code kept. */
export function accountRun(
  d: UsageData,
  out: Pick<TaskRunOutput, 'runTokens' | 'runCachedInputTokens' | 'runCostUsd' | 'counters' | 'result'>,
): void {
  d.tokensUsed += out.runTokens;
  if (out.runCachedInputTokens) d.cachedInputTokens = (d.cachedInputTokens ?? 0) + out.runCachedInputTokens;
  if (out.runCostUsd !== undefined) d.costUsd = roundUsd((d.costUsd ?? 0) + out.runCostUsd);
  d.counters = out.counters;
  const lastCall = out.result.toolCalls.at(-1);
  if (lastCall?.error) d.lastErrorCode = lastCall.error.code;
}

/** The running task's report: its counters and last error code are the agent's now. */
export function progressUsage(d: UsageData, p: Pick<ProgressReport, 'counters' | 'lastErrorCode'>): void {
  d.counters = p.counters;
  if (p.lastErrorCode) d.lastErrorCode = p.lastErrorCode;
}

/** A fresh start, window included, so the failures that locked the agent do not lock it again (unlock). */
export function resetCounters(d: UsageData): void {
  d.counters = initialCounters();
}

/** The agent's tokens, the running task's so far included. */
export function tokensWithRun(d: UsageData, current: RunningTask | undefined): number {
  return d.tokensUsed + (current?.runTokens ?? 0);
}

/**
 * The agent's cached input tokens and cost, the running task's so far included, each when there is
 * some; and its cost budget, when it has one.
 */
export function spendOf(
  d: UsageData,
  current: RunningTask | undefined,
  costBudgetUsd: number | undefined,
): Pick<AgentStatus, 'cachedInputTokens' | 'costUsd' | 'costBudgetUsd'> {
  const cached = (d.cachedInputTokens ?? 0) + (current?.runCachedInputTokens ?? 0);
  const cost =
    d.costUsd === undefined && current?.runCostUsd === undefined
      ? undefined
      : roundUsd((d.costUsd ?? 0) + (current?.runCostUsd ?? 0));
  return {
    ...(cached ? { cachedInputTokens: cached } : {}),
    ...(cost !== undefined ? { costUsd: cost } : {}),
    ...(costBudgetUsd !== undefined ? { costBudgetUsd } : {}),
  };
}

/**
 * What an unlock of a budget stop says when the budget is still spent: the next LLM call stops again,
 * and how to raise it. Nothing when the lock was not a budget's or the budget has room now.
 */
export function stillSpent(
  d: UsageData,
  agentId: string,
  reason: LockReason | undefined,
  addTokens: number,
  safety: AgentConfig['safety'] | undefined,
): string[] {
  const notes: string[] = [];
  const budget = safety?.tokenBudget;
  if (reason?.code === 'BUDGET_EXHAUSTED' && addTokens === 0 && budget !== undefined && d.tokensUsed >= budget) {
    notes.push(
      `the budget is still exhausted (${d.tokensUsed} of ${budget} tokens): the next LLM call will stop again; pass --add-tokens N to raise it`,
    );
  }
  const costBudget = safety?.costBudgetUsd;
  if (reason?.code === 'COST_BUDGET_EXHAUSTED' && costBudget !== undefined && (d.costUsd ?? 0) >= costBudget) {
    notes.push(
      `the cost budget is still spent ($${d.costUsd ?? 0} of $${costBudget}): the next LLM call will stop again; raise it first with starry limits ${agentId} --cost-budget-usd N`,
    );
  }
  return notes;
}
