/**
 * The safety ladder's rungs (docs/ARCHITECTURE.md#the-safety-ladder): small named checks with one signature. Each
 * reports what
 * it would do; `SafetyMonitor` (safety-monitor.ts) combines them in one place.
 */
import type { SafetyConfig } from './config';
import type { NormalizedError } from './errors';
import type { SafetyAlert } from './guides/guide';
import { failuresInWindow, type SafetyCounters } from './safety-counters';
import type { LockReason } from './types';
import { outputTokensFor, roundUsd, type Price } from './pricing';

/** The seeds' name for the error-cascade action; every ERROR_CASCADE message starts with it. */
export const EMERGENCY_HALT = 'EMERGENCY_HALT';

/** A breaker that locks the agent: the state to enter and why. Every lock pages the daemon (core/alerts.ts). */
export interface LockVerdict {
  agentState: 'SAFETY_LOCKOUT' | 'STOPPED' | 'ERROR_PAUSED';
  reason: LockReason;
}

/** What one rung says when it trips. */
export interface RungOutcome {
  lock?: LockVerdict;
  alert?: SafetyAlert;
  /** Skip the rest of this turn's tool calls. */
  skipRest?: boolean;
}

/** The one signature of every rung: `undefined` when it does not trip. */
export type SafetyRung<I> = (safety: SafetyConfig, input: I) => RungOutcome | undefined;

/** onEventLoopStart input: 1-based tick index within the task's current allowance. */
export interface TickInput {
  tick: number;
}

/**
 * beforeLLMCall input: the agent's cumulative token usage, and with a cost budget its cumulative cost and
 * the price of the task's model (core/pricing.ts).
 */
export interface UsageInput {
  tokensUsed: number;
  costUsd?: number;
  price?: Price;
}

/** afterToolExecution input after a failure; `counters` already include that failure. */
export interface FailureInput {
  counters: SafetyCounters;
  toolName: string;
  fingerprint: string;
}

/**
 * Loop cap: a task may run `maxTicks` ticks per allowance.
 *
 * ```ts
 * loopCap(safety, { tick: 51 })?.lock?.reason.code // 'LOOP_CAP' with the default cap of 50
 * ```
 */
export const loopCap: SafetyRung<TickInput> = (safety, { tick }) =>
  tick > safety.maxTicks
    ? lock('SAFETY_LOCKOUT', {
        code: 'LOOP_CAP',
        message: `Infinite loop suspected: tick ${tick} exceeds the cap of ${safety.maxTicks} ticks per task`,
      })
    : undefined;

/** Temporal's hard limits on one workflow's history, and the share of them a task may use. */
export const HISTORY_LIMITS = { events: 51_200, bytes: 50 * 1024 * 1024, share: 0.8 } as const;

/**
 * History limit: a task stops at 80% of Temporal's history limits, suspended with its transcript, rather
 * than being terminated by the server at 100% with nothing kept. `unlock --resume` continues it in a
 * fresh run (a new history).
 *
 * ```ts
 * historyLimit({ events: 45_000, bytes: 1e6 })?.lock?.reason.code // 'HISTORY_LIMIT'
 * ```
 */
export function historyLimit(history: { events: number; bytes: number }): RungOutcome | undefined {
  const { events, bytes, share } = HISTORY_LIMITS;
  if (history.events < events * share && history.bytes < bytes * share) return undefined;
  return lock('SAFETY_LOCKOUT', {
    code: 'HISTORY_LIMIT',
    message: `the task's history reached ${history.events} events / ${(history.bytes / 1024 / 1024).toFixed(1)} MB, near Temporal's limits (${events} events / 50 MB): \`starry unlock <agent> --resume\` continues it in a fresh history`,
  });
}

/**
 * Token budget: no LLM call once the agent has used its budget.
 *
 * ```ts
 * tokenBudget(safety, { tokensUsed: 100_000 })?.lock?.agentState // 'STOPPED'
 * ```
 */
export const tokenBudget: SafetyRung<UsageInput> = (safety, { tokensUsed }) =>
  tokensUsed >= safety.tokenBudget
    ? lock('STOPPED', {
        code: 'BUDGET_EXHAUSTED',
        message: `Token budget exhausted: ${tokensUsed} tokens used of a budget of ${safety.tokenBudget}`,
      })
    : undefined;

/**
 * Cost budget: no LLM call once the agent's calls cost `costBudgetUsd`, or once what is left of it does
 * not buy one output token (the call would be capped to nothing). No cost budget, no check.
 *
 * ```ts
 * costBudget({ ...safety, costBudgetUsd: 1 }, { tokensUsed: 0, costUsd: 1, price })?.lock?.reason.code // 'COST_BUDGET_EXHAUSTED'
 * ```
 */
export const costBudget: SafetyRung<UsageInput> = (safety, { costUsd = 0, price }) => {
  const budget = safety.costBudgetUsd;
  if (budget === undefined) return undefined;
  const left = budget - costUsd;
  if (left > 0 && (!price || outputTokensFor(left, price) >= 1)) return undefined;
  return lock('STOPPED', {
    code: 'COST_BUDGET_EXHAUSTED',
    message: `Cost budget exhausted: $${roundUsd(costUsd)} spent of a budget of $${budget}${left > 0 ? ` (the $${roundUsd(left)} left buys no output token)` : ''}`,
  });
};

/**
 * Repeated failure: the identical-failure run has just reached `repeatThreshold`; alert once.
 *
 * ```ts
 * repeatAlert(safety, input)?.alert?.kind // 'REPEAT_ALERT' on the 3rd identical failure
 * ```
 */
export const repeatAlert: SafetyRung<FailureInput> = (safety, input) =>
  input.counters.repeat?.count === safety.repeatThreshold ? { alert: alert('REPEAT_ALERT', input) } : undefined;

/**
 * Repeated after alert: the run went on past the alert.
 *
 * ```ts
 * repeatedFailure(safety, input)?.lock?.reason.code // 'REPEATED_FAILURE' on the 4th
 * ```
 */
export const repeatedFailure: SafetyRung<FailureInput> = (safety, { counters }) => {
  const run = counters.repeat;
  if (run === null || run.count <= safety.repeatThreshold) return undefined;
  return lock('SAFETY_LOCKOUT', {
    code: 'REPEATED_FAILURE',
    message:
      `Repeated failure after alert: ${run.toolName} failed ${run.count} times in a row ` +
      `with the same arguments (fingerprint ${run.fingerprint})`,
  });
};

/**
 * Frustration: every `frustrationThreshold` consecutive failures, whatever the calls, stop the turn.
 *
 * ```ts
 * frustration(safety, input) // { alert: { kind: 'FRUSTRATION', ... }, skipRest: true } at 5, 10, ...
 * ```
 */
export const frustration: SafetyRung<FailureInput> = (safety, input) => {
  const n = input.counters.consecutiveFailures;
  return n > 0 && n % safety.frustrationThreshold === 0
    ? { alert: alert('FRUSTRATION', input), skipRest: true }
    : undefined;
};

/**
 * Error cascade: `cascadeErrors` failures among the last `cascadeWindow` operations (or among the
 * operations so far, while there are fewer) pause the agent (ERROR_PAUSED: the daemon's alert is critical).
 *
 * ```ts
 * errorCascade(safety, input)?.lock?.reason.message // 'EMERGENCY_HALT: 8 failures among the last 10 operations ...'
 * ```
 */
export const errorCascade: SafetyRung<FailureInput> = (safety, { counters }) => {
  const failures = failuresInWindow(counters);
  if (failures < safety.cascadeErrors) return undefined;
  // Names the configured window even while fewer ops have run: "among the last 10" still holds then.
  const message =
    `${EMERGENCY_HALT}: ${failures} failures among the last ${safety.cascadeWindow} operations ` +
    `(the limit is ${safety.cascadeErrors})`;
  // ERROR_PAUSED, not a lockout: a cascade usually means the environment is broken.
  return lock('ERROR_PAUSED', { code: 'ERROR_CASCADE', message });
};

/**
 * The lock a fatal error puts the agent in: ERROR_PAUSED with reason FATAL.
 *
 * ```ts
 * fatalLock(error).reason.message // 'E_AUTH: 401 Unauthorized'
 * ```
 */
export function fatalLock(error: Pick<NormalizedError, 'code' | 'message'>): LockVerdict {
  return {
    agentState: 'ERROR_PAUSED',
    reason: { code: 'FATAL', message: `${error.code}: ${error.message}` },
  };
}

function lock(agentState: LockVerdict['agentState'], reason: LockReason): RungOutcome {
  return { lock: { agentState, reason } };
}

function alert(kind: SafetyAlert['kind'], input: FailureInput): SafetyAlert {
  return {
    kind,
    toolName: input.toolName,
    fingerprint: input.fingerprint,
    consecutiveFailures: input.counters.consecutiveFailures,
    repeatCount: input.counters.repeat?.count ?? 0,
  };
}
