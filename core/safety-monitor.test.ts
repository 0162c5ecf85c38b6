import fc from 'fast-check';
import { safetyConfigSchema, type SafetyConfig } from './config';
import { fingerprint } from './fingerprint';
import type { SafetyAlert } from './guides/guide';
import {
  combine,
  initialCounters,
  outputTokenAllowance,
  SafetyMonitor,
  type LockVerdict,
  type SafetyCounters,
  type Verdict,
} from './safety-monitor';

const defaults = safetyConfigSchema().parse({});

/** One executed tool call as the workflow reports it. */
interface Op {
  toolName: string;
  fingerprint: string;
  success: boolean;
}

/** Input builder: a call to `toolName` with `{ path }`, failed unless `ok`. */
const call = (path: string, { ok = false, toolName = 'fs.read' } = {}): Op => ({
  toolName,
  fingerprint: fingerprint(toolName, { path }),
  success: ok,
});
const A = call('a.txt');
const B = call('b.txt');
const OK = call('a.txt', { ok: true });

interface Step {
  op: Op;
  before: SafetyCounters;
  verdict: Verdict & { counters: SafetyCounters };
}

/** Feed the ops through afterToolExecution the way the workflow does, threading the counters. */
function run(safety: SafetyConfig, ops: readonly Op[], start: SafetyCounters = initialCounters()): Step[] {
  const steps: Step[] = [];
  let counters = start;
  for (const op of ops) {
    const verdict = SafetyMonitor.afterToolExecution(safety, counters, op);
    steps.push({ op, before: counters, verdict });
    counters = verdict.counters;
  }
  return steps;
}

/** Window builder: `n` failures. */
function windowOfFailures(n: number): Array<'ok' | 'failed'> {
  return Array.from({ length: n }, () => 'failed' as const);
}

const kinds = (v: Verdict) => v.alerts.map((a) => a.kind);

/** Freeze all the way down, so a mutation throws (test files are strict mode). */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') Object.values(value).forEach(deepFreeze);
  return Object.freeze(value);
}

const safetyArb: fc.Arbitrary<SafetyConfig> = fc
  .record({
    repeatThreshold: fc.integer({ min: 1, max: 5 }),
    frustrationThreshold: fc.integer({ min: 1, max: 8 }),
    cascadeWindow: fc.integer({ min: 1, max: 12 }),
  })
  .chain((s) =>
    fc
      .integer({ min: 1, max: s.cascadeWindow })
      .map((cascadeErrors) => safetyConfigSchema().parse({ ...s, cascadeErrors })),
  );

// Few distinct calls, so identical runs are common.
const opArb: fc.Arbitrary<Op> = fc
  .record({ toolName: fc.constantFrom('fs.read', 'shell.run'), path: fc.constantFrom('a', 'b'), ok: fc.boolean() })
  .map(({ toolName, path, ok }) => call(path, { ok, toolName }));
const opsArb = fc.array(opArb, { maxLength: 40 });

/** Reference model: failures among the last `cascadeWindow` ops of the history up to and including step `i`. */
const recentFailures = (steps: Step[], i: number, window: number) =>
  steps.slice(Math.max(0, i + 1 - window), i + 1).filter((s) => !s.op.success).length;

/** Reference model: length of the run of identical failures ending at step `i`. */
function identicalRun(steps: Step[], i: number): number {
  let n = 0;
  for (let j = i; j >= 0 && !steps[j]!.op.success && steps[j]!.op.fingerprint === steps[i]!.op.fingerprint; j--) n++;
  return n;
}

describe('SafetyMonitor.onEventLoopStart', () => {
  it('locks the agent out at maxTicks + 1 and not before', () => {
    for (let tick = 1; tick <= defaults.maxTicks; tick++) {
      expect(SafetyMonitor.onEventLoopStart(defaults, { tick })).toEqual({ alerts: [], skipRest: false });
    }
    const verdict = SafetyMonitor.onEventLoopStart(defaults, { tick: 51 });
    expect(verdict.lock).toEqual({
      agentState: 'SAFETY_LOCKOUT',
      reason: { code: 'LOOP_CAP', message: 'Infinite loop suspected: tick 51 exceeds the cap of 50 ticks per task' },
    });
  });
});

describe('SafetyMonitor.beforeLLMCall', () => {
  it('stops the agent once usage reaches the budget', () => {
    expect(SafetyMonitor.beforeLLMCall(defaults, { tokensUsed: 99_999 }).lock).toBeUndefined();
    expect(SafetyMonitor.beforeLLMCall(defaults, { tokensUsed: 100_000 }).lock).toMatchObject({
      agentState: 'STOPPED',
      reason: { code: 'BUDGET_EXHAUSTED' },
    });
  });

  it('stops at the cost budget and caps maxOutputTokens to what the dollars left buy at the output price', () => {
    const price = { inputPerMTok: 2.5, cachedInputPerMTok: 1.25, outputPerMTok: 10 };
    const costly = { ...defaults, costBudgetUsd: 1 };
    expect(SafetyMonitor.beforeLLMCall(costly, { tokensUsed: 0, costUsd: 0.999, price })).toMatchObject({
      maxOutputTokens: 100,
    });
    expect(SafetyMonitor.beforeLLMCall(costly, { tokensUsed: 0, costUsd: 0, price }).maxOutputTokens).toBe(8192);
    expect(SafetyMonitor.beforeLLMCall(costly, { tokensUsed: 0, costUsd: 1, price }).lock).toMatchObject({
      agentState: 'STOPPED',
      reason: { code: 'COST_BUDGET_EXHAUSTED' },
    });
    // The token budget is the first rung: both spent, it names the tokens.
    expect(SafetyMonitor.beforeLLMCall(costly, { tokensUsed: 100_000, costUsd: 1, price }).lock?.reason.code).toBe(
      'BUDGET_EXHAUSTED',
    );
  });

  it('caps maxOutputTokens to what is left of the budget', () => {
    expect(SafetyMonitor.beforeLLMCall(defaults, { tokensUsed: 0 }).maxOutputTokens).toBe(8192);
    expect(SafetyMonitor.beforeLLMCall(defaults, { tokensUsed: 99_000 }).maxOutputTokens).toBe(1000);
    expect(SafetyMonitor.beforeLLMCall(defaults, { tokensUsed: 120_000 }).maxOutputTokens).toBe(0);
  });

  it('never lets one call overshoot the budget', () => {
    fc.assert(
      fc.property(fc.nat({ max: 200_000 }), (tokensUsed) => {
        const allowed = outputTokenAllowance(defaults, tokensUsed);
        expect(allowed).toBeGreaterThanOrEqual(0);
        expect(allowed).toBeLessThanOrEqual(defaults.maxOutputTokens);
        if (tokensUsed < defaults.tokenBudget) expect(tokensUsed + allowed).toBeLessThanOrEqual(defaults.tokenBudget);
      }),
    );
  });
});

describe('SafetyMonitor.afterToolExecution scenarios', () => {
  it('alerts on exactly the 3rd identical failure (A A A)', () => {
    const steps = run(defaults, [A, A, A]);
    expect(steps.map((s) => kinds(s.verdict))).toEqual([[], [], ['REPEAT_ALERT']]);
    expect(steps[2]!.verdict.alerts[0]).toEqual({
      kind: 'REPEAT_ALERT',
      toolName: 'fs.read',
      fingerprint: A.fingerprint,
      consecutiveFailures: 3,
      repeatCount: 3,
    });
    expect(steps.every((s) => s.verdict.lock === undefined && !s.verdict.skipRest)).toBe(true);
  });

  it('locks the agent out on the 4th identical failure (A A A A)', () => {
    const steps = run(defaults, [A, A, A, A]);
    expect(steps.slice(0, 3).every((s) => s.verdict.lock === undefined)).toBe(true);
    expect(steps[3]!.verdict.lock).toMatchObject({
      agentState: 'SAFETY_LOCKOUT',
      reason: { code: 'REPEATED_FAILURE' },
    });
    expect(kinds(steps[3]!.verdict)).toEqual([]);
  });

  it('does not alert when a different failure breaks the run (A A B A)', () => {
    const steps = run(defaults, [A, A, B, A]);
    expect(steps.every((s) => s.verdict.alerts.length === 0 && s.verdict.lock === undefined)).toBe(true);
  });

  it('does not alert when a success breaks the run (A A ok A A)', () => {
    const steps = run(defaults, [A, A, OK, A, A]);
    expect(steps.every((s) => s.verdict.alerts.length === 0 && s.verdict.lock === undefined)).toBe(true);
  });

  it('raises frustration at 5 different failures, then EMERGENCY_HALT at 8', () => {
    const ops = Array.from({ length: 8 }, (_, i) => call(`file-${i}.txt`));
    const steps = run(defaults, ops);
    steps.forEach((s, i) => {
      const fifth = i === 4;
      expect(kinds(s.verdict)).toEqual(fifth ? ['FRUSTRATION'] : []);
      expect(s.verdict.skipRest).toBe(fifth);
      if (i < 7) expect(s.verdict.lock).toBeUndefined();
    });
    const halt = steps[7]!.verdict.lock;
    expect(halt).toMatchObject({ agentState: 'ERROR_PAUSED', reason: { code: 'ERROR_CASCADE' } });
    expect(halt?.reason.message.startsWith('EMERGENCY_HALT: 8 failures among the last 10 operations')).toBe(true);
  });

  it('puts FRUSTRATION ahead of REPEAT_ALERT when both fire', () => {
    const safety = safetyConfigSchema().parse({ repeatThreshold: 3, frustrationThreshold: 3 });
    const last = run(safety, [A, A, A]).at(-1)!.verdict;
    expect(kinds(last)).toEqual(['FRUSTRATION', 'REPEAT_ALERT']);
    expect(last.skipRest).toBe(true);
  });

  it('lets REPEATED_FAILURE win over ERROR_CASCADE when both trip', () => {
    const safety = safetyConfigSchema().parse({ repeatThreshold: 3, cascadeWindow: 4, cascadeErrors: 4 });
    expect(run(safety, [A, A, A, A]).at(-1)!.verdict.lock?.reason.code).toBe('REPEATED_FAILURE');
  });

  it('reports a success with no alerts and no lock', () => {
    const repeat = { fingerprint: A.fingerprint, toolName: A.toolName, count: 2 };
    const [step] = run(defaults, [OK], { consecutiveFailures: 4, repeat, window: windowOfFailures(9) });
    expect(step!.verdict).toEqual({
      alerts: [],
      skipRest: false,
      counters: { consecutiveFailures: 0, repeat: null, window: [...windowOfFailures(9), 'ok'] },
    });
  });
});

describe('SafetyMonitor.afterToolExecution properties', () => {
  it('never locks ERROR_CASCADE with fewer than cascadeErrors failures in the last cascadeWindow ops', () => {
    fc.assert(
      fc.property(safetyArb, opsArb, (safety, ops) => {
        run(safety, ops).forEach((s, i, steps) => {
          const failures = recentFailures(steps, i, safety.cascadeWindow);
          if (s.verdict.lock?.reason.code === 'ERROR_CASCADE')
            expect(failures).toBeGreaterThanOrEqual(safety.cascadeErrors);
          // And the converse: a failure that completes a cascade always locks (another rung may win).
          if (!s.op.success && failures >= safety.cascadeErrors) expect(s.verdict.lock).toBeDefined();
        });
      }),
    );
  });

  it('always resets consecutiveFailures and repeat on a success', () => {
    fc.assert(
      fc.property(safetyArb, opsArb, (safety, ops) => {
        for (const s of run(safety, ops).filter((step) => step.op.success)) {
          expect(s.verdict.counters.consecutiveFailures).toBe(0);
          expect(s.verdict.counters.repeat).toBeNull();
          expect(s.verdict).toMatchObject({ alerts: [], skipRest: false });
          expect(s.verdict.lock).toBeUndefined();
        }
      }),
    );
  });

  it('fires REPEAT_ALERT exactly when the identical run reaches repeatThreshold', () => {
    fc.assert(
      fc.property(safetyArb, opsArb, (safety, ops) => {
        run(safety, ops).forEach((s, i, steps) => {
          const alerted = s.verdict.alerts.some((a: SafetyAlert) => a.kind === 'REPEAT_ALERT');
          expect(alerted).toBe(!s.op.success && identicalRun(steps, i) === safety.repeatThreshold);
        });
      }),
    );
  });

  it('serializes and deserializes the counters through structuredClone and JSON', () => {
    fc.assert(
      fc.property(safetyArb, opsArb, opsArb, (safety, history, more) => {
        const counters = run(safety, history).at(-1)?.verdict.counters ?? initialCounters();
        const verdicts = (start: SafetyCounters) => run(safety, more, start).map((s) => s.verdict);
        for (const copy of [structuredClone(counters), JSON.parse(JSON.stringify(counters)) as SafetyCounters]) {
          expect(copy).toEqual(counters);
          expect(verdicts(copy)).toEqual(verdicts(counters));
        }
      }),
    );
  });

  it('never mutates the counters it is given', () => {
    fc.assert(
      fc.property(safetyArb, opsArb, opArb, (safety, history, op) => {
        const before = run(safety, history).at(-1)?.verdict.counters ?? initialCounters();
        const snapshot = structuredClone(before);
        SafetyMonitor.afterToolExecution(safety, deepFreeze(before), op);
        expect(before).toEqual(snapshot);
      }),
    );
  });
});

describe('combine', () => {
  it('keeps the first lock, orders the alerts and ORs skipRest', () => {
    const alert = (kind: SafetyAlert['kind']): SafetyAlert => ({
      kind,
      toolName: 't',
      fingerprint: 'f',
      consecutiveFailures: 1,
      repeatCount: 1,
    });
    const first: LockVerdict = {
      agentState: 'SAFETY_LOCKOUT',
      reason: { code: 'REPEATED_FAILURE', message: '1' },
    };
    const second: LockVerdict = {
      agentState: 'ERROR_PAUSED',
      reason: { code: 'ERROR_CASCADE', message: '2' },
    };
    const outcomes = [
      { alert: alert('REPEAT_ALERT') },
      { lock: first },
      undefined,
      { alert: alert('FRUSTRATION'), skipRest: true },
      { lock: second },
    ];
    expect(combine(outcomes)).toEqual({
      lock: first,
      alerts: [alert('FRUSTRATION'), alert('REPEAT_ALERT')],
      skipRest: true,
    });
  });

  it('gives an empty verdict without a lock key when nothing trips', () => {
    expect(combine([undefined, {}])).toStrictEqual({ alerts: [], skipRest: false });
  });
});
