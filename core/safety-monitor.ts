/**
 * The SafetyMonitor (docs/ARCHITECTURE.md#the-safety-ladder): the workflow calls one hook per loop step and gets a
 * verdict back.
 * Pure functions over plain data, so the circuit breakers live in workflow state and replay exactly.
 */
import type { SafetyConfig } from './config';
import { outputTokensFor } from './pricing';
import type { SafetyAlert } from './guides/guide';
import { recordOperation, type SafetyCounters } from './safety-counters';
import {
  errorCascade,
  frustration,
  loopCap,
  repeatedFailure,
  repeatAlert,
  costBudget,
  tokenBudget,
  type FailureInput,
  type LockVerdict,
  type RungOutcome,
  type SafetyRung,
  type TickInput,
  type UsageInput,
} from './safety-rungs';

export { initialCounters, type SafetyCounters } from './safety-counters';
export { EMERGENCY_HALT, type LockVerdict } from './safety-rungs';

/** What the workflow must do after a hook: lock the agent, inject alerts, skip the turn's remaining calls. */
export interface Verdict {
  lock?: LockVerdict;
  /** In injection order. */
  alerts: SafetyAlert[];
  skipRest: boolean;
}

// The ladder, per hook, in docs/ARCHITECTURE.md#the-safety-ladder table order: the first lock in a table wins.
const EVENT_LOOP_RUNGS: ReadonlyArray<SafetyRung<TickInput>> = [loopCap];
const LLM_CALL_RUNGS: ReadonlyArray<SafetyRung<UsageInput>> = [tokenBudget, costBudget];
const TOOL_FAILURE_RUNGS: ReadonlyArray<SafetyRung<FailureInput>> = [
  repeatAlert,
  repeatedFailure,
  frustration,
  errorCascade,
];

// FRUSTRATION is inserted "ahead of everything else"; lower goes first.
const ALERT_ORDER: Record<SafetyAlert['kind'], number> = { FRUSTRATION: 0, REPEAT_ALERT: 1 };

/**
 * Combine rung outcomes in one place: the first lock (in the order given) wins, alerts are put in
 * injection order, and `skipRest` is set when any rung asks for it.
 *
 * ```ts
 * combine([{ alert: repeatAlert }, undefined, { alert: frustrationAlert, skipRest: true }])
 * // { alerts: [frustrationAlert, repeatAlert], skipRest: true }
 * ```
 */
export function combine(outcomes: ReadonlyArray<RungOutcome | undefined>): Verdict {
  const tripped = outcomes.filter((o): o is RungOutcome => o !== undefined);
  const lock = tripped.find((o) => o.lock !== undefined)?.lock;
  const alerts = tripped
    .flatMap((o) => (o.alert === undefined ? [] : [o.alert]))
    .sort((a, b) => ALERT_ORDER[a.kind] - ALERT_ORDER[b.kind]);
  const verdict: Verdict = { alerts, skipRest: tripped.some((o) => o.skipRest === true) };
  // Omitted rather than `undefined`, so the verdict is the same after a JSON round trip.
  if (lock !== undefined) verdict.lock = lock;
  return verdict;
}

/**
 * Output tokens the next LLM call may produce: the configured maximum, capped to what is left of the
 * token budget, and with a cost budget to what the dollars left buy at the model's output price, so one
 * call cannot overshoot either.
 *
 * ```ts
 * outputTokenAllowance(safety, 99_000) // 1000 with the defaults (budget 100,000, max 8192)
 * outputTokenAllowance({ ...safety, costBudgetUsd: 1 }, 0, { costUsd: 0.999, price }) // 100 at $10 per million output tokens
 * ```
 */
export function outputTokenAllowance(
  safety: SafetyConfig,
  tokensUsed: number,
  cost: Omit<UsageInput, 'tokensUsed'> = {},
): number {
  const tokens = Math.min(safety.maxOutputTokens, safety.tokenBudget - tokensUsed);
  const { costBudgetUsd } = safety;
  const bought =
    costBudgetUsd !== undefined && cost.price
      ? outputTokensFor(costBudgetUsd - (cost.costUsd ?? 0), cost.price)
      : Number.MAX_SAFE_INTEGER;
  return Math.max(0, Math.min(tokens, bought));
}

/**
 * The three hooks of the loop. Each takes the agent's safety config and the facts of the step.
 *
 * ```ts
 * const v = SafetyMonitor.afterToolExecution(cfg.safety, state.counters, { toolName, fingerprint, success: false });
 * state.counters = v.counters;
 * if (v.lock) return suspend(v.lock);
 * ```
 */
export const SafetyMonitor = {
  /** Loop cap. `tick`: 1-based tick index within the task's current allowance. */
  onEventLoopStart(safety: SafetyConfig, input: TickInput): Verdict {
    return combine(EVENT_LOOP_RUNGS.map((rung) => rung(safety, input)));
  },

  /**
   * Token and cost budgets. `tokensUsed`, `costUsd`: the agent's cumulative usage and cost; `price`: the
   * task's model's. `maxOutputTokens` is what the call may produce: `min(safety.maxOutputTokens,
   * tokenBudget - tokensUsed, what the dollars left buy)`, never below 0.
   */
  beforeLLMCall(safety: SafetyConfig, input: UsageInput): Verdict & { maxOutputTokens: number } {
    const verdict = combine(LLM_CALL_RUNGS.map((rung) => rung(safety, input)));
    return { ...verdict, maxOutputTokens: outputTokenAllowance(safety, input.tokensUsed, input) };
  },

  /**
   * Behavioural breakers, judged on the counters updated with this outcome. Skipped calls are never
   * passed here. A success only updates the counters. Never mutates `counters`.
   */
  afterToolExecution(
    safety: SafetyConfig,
    counters: SafetyCounters,
    input: { toolName: string; fingerprint: string; success: boolean },
  ): Verdict & { counters: SafetyCounters } {
    const next = recordOperation(counters, { ...input, cascadeWindow: safety.cascadeWindow });
    if (input.success) return { alerts: [], skipRest: false, counters: next };
    const failure: FailureInput = { counters: next, toolName: input.toolName, fingerprint: input.fingerprint };
    return { ...combine(TOOL_FAILURE_RUNGS.map((rung) => rung(safety, failure))), counters: next };
  },
};
