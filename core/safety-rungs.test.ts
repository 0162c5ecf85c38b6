import { safetyConfigSchema } from './config';
import {
  EMERGENCY_HALT,
  errorCascade,
  frustration,
  historyLimit,
  loopCap,
  repeatedFailure,
  repeatAlert,
  costBudget,
  tokenBudget,
  type FailureInput,
} from './safety-rungs';

const safety = safetyConfigSchema().parse({});

/**
 * Input builder for the failure rungs: the state right after a failed `fs.read` with print `A`.
 * `repeatCount` 0 means no identical run; `window` defaults to `consecutiveFailures` failures.
 */
function failure(
  over: { consecutiveFailures?: number; repeatCount?: number; window?: Array<'ok' | 'failed'> } = {},
): FailureInput {
  const consecutiveFailures = over.consecutiveFailures ?? over.repeatCount ?? 1;
  const repeatCount = over.repeatCount ?? 1;
  return {
    toolName: 'fs.read',
    fingerprint: 'A',
    counters: {
      consecutiveFailures,
      repeat: repeatCount === 0 ? null : { fingerprint: 'A', toolName: 'fs.read', count: repeatCount },
      window: over.window ?? Array.from({ length: consecutiveFailures }, () => 'failed' as const),
    },
  };
}

/** Window builder: `failed` failures after `ok` successes. */
const windowOf = (ok: number, failed: number): Array<'ok' | 'failed'> => [
  ...Array.from({ length: ok }, () => 'ok' as const),
  ...Array.from({ length: failed }, () => 'failed' as const),
];

describe('loopCap', () => {
  it('lets every tick up to maxTicks through', () => {
    expect(loopCap(safety, { tick: 1 })).toBeUndefined();
    expect(loopCap(safety, { tick: 50 })).toBeUndefined();
  });

  it('locks the agent out on the first tick past the cap, without a daemon alert', () => {
    expect(loopCap(safety, { tick: 51 })).toEqual({
      lock: {
        agentState: 'SAFETY_LOCKOUT',
        reason: { code: 'LOOP_CAP', message: 'Infinite loop suspected: tick 51 exceeds the cap of 50 ticks per task' },
      },
    });
  });

  it('follows the configured cap', () => {
    const small = safetyConfigSchema().parse({ maxTicks: 3 });
    expect(loopCap(small, { tick: 3 })).toBeUndefined();
    expect(loopCap(small, { tick: 4 })?.lock?.reason.code).toBe('LOOP_CAP');
  });
});

describe('historyLimit', () => {
  it('lets a task run below 80% of either history limit', () => {
    expect(historyLimit({ events: 40_959, bytes: 40 * 1024 * 1024 - 1 })).toBeUndefined();
  });

  it('suspends it with its transcript at 80% of the event limit or of the size limit, saying how to go on', () => {
    for (const h of [
      { events: 40_960, bytes: 1000 },
      { events: 10, bytes: 40 * 1024 * 1024 },
    ]) {
      const out = historyLimit(h);
      expect(out?.lock).toMatchObject({
        agentState: 'SAFETY_LOCKOUT',
        reason: { code: 'HISTORY_LIMIT' },
      });
      expect(out?.lock?.reason.message).toMatch(/unlock <agent> --resume` continues it in a fresh history/);
    }
  });
});

describe('tokenBudget', () => {
  it('lets calls through while usage is below the budget', () => {
    expect(tokenBudget(safety, { tokensUsed: 99_999 })).toBeUndefined();
  });

  it('stops the agent once usage reaches the budget, naming the figures', () => {
    const lock = tokenBudget(safety, { tokensUsed: 100_000 })?.lock;
    expect(lock).toMatchObject({ agentState: 'STOPPED', reason: { code: 'BUDGET_EXHAUSTED' } });
    expect(lock?.reason.message).toBe('Token budget exhausted: 100000 tokens used of a budget of 100000');
    expect(tokenBudget(safety, { tokensUsed: 250_000 })?.lock?.reason.message).toContain('250000');
  });
});

describe('costBudget', () => {
  const price = { inputPerMTok: 2.5, cachedInputPerMTok: 1.25, outputPerMTok: 10 };
  const costly = { ...safety, costBudgetUsd: 1 };

  it('never trips without a cost budget', () => {
    expect(costBudget(safety, { tokensUsed: 0, costUsd: 1e6, price })).toBeUndefined();
  });

  it('lets calls through while what is left buys an output token', () => {
    expect(costBudget(costly, { tokensUsed: 0, costUsd: 0.99999, price })).toBeUndefined();
  });

  it('stops the agent once the dollars are spent, or what is left buys no output token, naming the figures', () => {
    const lock = costBudget(costly, { tokensUsed: 0, costUsd: 1, price })?.lock;
    expect(lock).toEqual({
      agentState: 'STOPPED',
      reason: { code: 'COST_BUDGET_EXHAUSTED', message: 'Cost budget exhausted: $1 spent of a budget of $1' },
    });
    expect(costBudget(costly, { tokensUsed: 0, costUsd: 0.999999995, price })?.lock?.reason.message).toContain(
      'buys no output token',
    );
  });
});

describe('repeatAlert', () => {
  it('alerts exactly when the identical run reaches repeatThreshold', () => {
    expect(repeatAlert(safety, failure({ repeatCount: 2 }))).toBeUndefined();
    expect(repeatAlert(safety, failure({ repeatCount: 3 }))).toEqual({
      alert: { kind: 'REPEAT_ALERT', toolName: 'fs.read', fingerprint: 'A', consecutiveFailures: 3, repeatCount: 3 },
    });
    expect(repeatAlert(safety, failure({ repeatCount: 4 }))).toBeUndefined();
  });

  it('stays quiet without a run', () => {
    expect(repeatAlert(safety, failure({ repeatCount: 0, consecutiveFailures: 3 }))).toBeUndefined();
  });
});

describe('repeatedFailure', () => {
  it('locks the agent out once the run goes past repeatThreshold', () => {
    expect(repeatedFailure(safety, failure({ repeatCount: 3 }))).toBeUndefined();
    const lock = repeatedFailure(safety, failure({ repeatCount: 4 }))?.lock;
    expect(lock).toMatchObject({
      agentState: 'SAFETY_LOCKOUT',
      reason: { code: 'REPEATED_FAILURE' },
    });
    expect(lock?.reason.message).toContain('fs.read failed 4 times in a row');
  });

  it('stays quiet without a run', () => {
    expect(repeatedFailure(safety, failure({ repeatCount: 0, consecutiveFailures: 9 }))).toBeUndefined();
  });
});

describe('frustration', () => {
  it('skips the rest of the turn with an alert at every multiple of frustrationThreshold', () => {
    for (const n of [5, 10, 15]) {
      expect(frustration(safety, failure({ consecutiveFailures: n, repeatCount: 1 }))).toEqual({
        alert: { kind: 'FRUSTRATION', toolName: 'fs.read', fingerprint: 'A', consecutiveFailures: n, repeatCount: 1 },
        skipRest: true,
      });
    }
  });

  it('stays quiet between multiples and at zero', () => {
    for (const n of [0, 1, 4, 6, 9]) {
      expect(frustration(safety, failure({ consecutiveFailures: n, repeatCount: 0, window: [] }))).toBeUndefined();
    }
  });
});

describe('errorCascade', () => {
  it('stays quiet below cascadeErrors failures in the window', () => {
    expect(errorCascade(safety, failure({ consecutiveFailures: 1, window: windowOf(3, 7) }))).toBeUndefined();
  });

  it('pauses the agent and alerts the daemon at cascadeErrors failures in the window', () => {
    expect(errorCascade(safety, failure({ consecutiveFailures: 1, window: windowOf(2, 8) }))).toEqual({
      lock: {
        agentState: 'ERROR_PAUSED',
        reason: {
          code: 'ERROR_CASCADE',
          message: `${EMERGENCY_HALT}: 8 failures among the last 10 operations (the limit is 8)`,
        },
      },
    });
  });

  it('counts over the operations so far while there are fewer than cascadeWindow', () => {
    const lock = errorCascade(safety, failure({ consecutiveFailures: 8, window: windowOf(0, 8) }))?.lock;
    expect(lock?.reason.message.startsWith('EMERGENCY_HALT: 8 failures among the last 10 operations')).toBe(true);
  });
});
