/**
 * A task run's spend (seeds: the token budget; the cost budget beside it): the tokens this run used, the
 * cached input tokens among them and what they cost, counted into the task's totals too; and what the
 * budget rungs weigh before a call, the agent's usage so far with this run's. Plain data: the next run
 * takes the figures over when the task continues as new (`Continued`).
 */
import type { AgentConfig } from '../config';
import { normalizedError, type NormalizedError } from '../errors';
import type { TokenUsage } from '../llm';
import { formatLlmSpec } from '../llm-spec';
import { costUsd, roundUsd, type Price } from '../pricing';
import { SafetyMonitor } from '../safety-monitor';
import type { UsageInput } from '../safety-rungs';
import type { TaskCheckpoint } from '../types';
import type { Continued, TaskRunInput, TaskRunOutput } from './io';

/** What this run spent. */
export interface SpendData {
  /** Tokens this run has used. */
  runTokens: number;
  /** Of its input tokens, those read from the provider's cache. */
  runCachedInputTokens: number;
  /** What its calls cost, in USD (0 without a price). */
  runCostUsd: number;
}

/** What the agent had spent before this run, and the price of the task's model. */
export type AgentSpend = Pick<TaskRunInput, 'agentTokensUsed' | 'agentCostUsd' | 'price'>;

/** The task's totals, which every call's usage adds to as well. */
export type TaskTotals = Pick<TaskCheckpoint, 'tokensUsed' | 'cachedInputTokens' | 'costUsd'>;

export class Spend {
  constructor(readonly data: SpendData) {}

  /** A run's spend: nothing yet, or what the run before it had counted when the task continued as new. */
  static of(continued?: Continued): Spend {
    return new Spend({
      runTokens: continued?.runTokens ?? 0,
      runCachedInputTokens: continued?.runCachedInputTokens ?? 0,
      runCostUsd: continued?.runCostUsd ?? 0,
    });
  }

  /** A call's usage counted: its tokens, its cached input tokens, and with a price its cost (run and task). */
  add(usage: TokenUsage, price: Price | undefined, task: TaskTotals): void {
    const d = this.data;
    const used = usage.inputTokens + usage.outputTokens;
    d.runTokens += used;
    task.tokensUsed += used;
    if (usage.cachedInputTokens) {
      d.runCachedInputTokens += usage.cachedInputTokens;
      task.cachedInputTokens = (task.cachedInputTokens ?? 0) + usage.cachedInputTokens;
    }
    if (price) {
      const cost = costUsd(usage, price);
      d.runCostUsd = roundUsd(d.runCostUsd + cost);
      task.costUsd = roundUsd((task.costUsd ?? 0) + cost);
    }
  }

  /** The agent's tokens so far, this run's included. */
  agentTokens(agent: AgentSpend): number {
    return agent.agentTokensUsed + this.data.runTokens;
  }

  /** The agent's cost so far, this run's included. */
  agentCost(agent: AgentSpend): number {
    return roundUsd((agent.agentCostUsd ?? 0) + this.data.runCostUsd);
  }

  /** What the budget rungs weigh before a call: the agent's tokens and cost, and the model's price. */
  usage(agent: AgentSpend): UsageInput {
    const { price } = agent;
    return { tokensUsed: this.agentTokens(agent), costUsd: this.agentCost(agent), ...(price ? { price } : {}) };
  }

  /** The budget rungs' verdict before a call (`beforeLLMCall`, which also caps its output), and what they weighed. */
  beforeCall(safety: AgentConfig['safety'], agent: AgentSpend) {
    const usage = this.usage(agent);
    return { usage, budget: SafetyMonitor.beforeLLMCall(safety, usage) };
  }

  /** This run's cached input tokens and cost, each when there is some. */
  reported(): Pick<TaskRunOutput, 'runCachedInputTokens' | 'runCostUsd'> {
    const d = this.data;
    return {
      ...(d.runCachedInputTokens ? { runCachedInputTokens: d.runCachedInputTokens } : {}),
      ...(d.runCostUsd ? { runCostUsd: d.runCostUsd } : {}),
    };
  }
}

/** A cost budget without a price for the model: the calls' cost cannot be counted against it. */
export function unpriced(config: AgentConfig, price: Price | undefined): boolean {
  return config.safety.costBudgetUsd !== undefined && !price;
}

/** Why a task with a cost budget and no price for its model cannot call it, and what to do. */
export function unpricedError(config: AgentConfig): NormalizedError {
  return normalizedError({
    code: 'EINVAL',
    kind: 'execution',
    source: 'cost budget',
    message: `safety.costBudgetUsd is set but the task has no price for its model ${formatLlmSpec(config.llm)}: its cost cannot be counted`,
    suggestion: `Add the model to the agent's "pricing" or to the worker's STARRY_PRICING, or leave costBudgetUsd out, and submit again.`,
  });
}
