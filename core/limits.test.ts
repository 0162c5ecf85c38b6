import { parseAgentConfig, SafetyConfig } from './config';
import { PermissionDeniedError } from './errors';
import {
  changeLimits,
  firstLimits,
  isLooser,
  LIMIT_FIELDS,
  loosenedLimits,
  refuseLooserLimits,
  runLimits,
} from './limits';
import { initialCounters, SafetyMonitor } from './safety-monitor';
import type { SafetyCounters } from './safety-counters';

const agent: SafetyConfig = parseAgentConfig({ safety: { tokenBudget: 1000 } }, 'scripted:x.json').safety;

/** Whether the error cascade trips after `outcomes` (true: a failure) with these limits. */
function cascadeTrips(safety: SafetyConfig, outcomes: boolean[]): boolean {
  let counters: SafetyCounters = initialCounters();
  for (const [i, failed] of outcomes.entries()) {
    const v = SafetyMonitor.afterToolExecution(safety, counters, {
      toolName: 'fs.read',
      fingerprint: `call-${i}`,
      success: !failed,
    });
    counters = v.counters;
    if (v.lock?.reason.code === 'ERROR_CASCADE') return true;
  }
  return false;
}

describe('limits: which way each field is looser', () => {
  it('is looser higher for every field but cascadeWindow, which is looser lower', () => {
    for (const field of LIMIT_FIELDS) {
      expect([field, isLooser(field, 11, 10)]).toEqual([field, field !== 'cascadeWindow']);
      expect([field, isLooser(field, 10, 10)]).toEqual([field, false]);
    }
  });

  it('a smaller cascade window lets through failures a larger one stops (so smaller is looser)', () => {
    // 4 failures, 2 successes between each pair: 4 of the last 10 operations, never 4 of the last 5.
    const outcomes = [true, false, false, true, false, false, true, false, false, true];
    const base = { ...agent, repeatThreshold: 100, frustrationThreshold: 100, cascadeErrors: 4 };
    expect(cascadeTrips({ ...base, cascadeWindow: 10 }, outcomes)).toBe(true);
    expect(cascadeTrips({ ...base, cascadeWindow: 5 }, outcomes)).toBe(false);
    expect(isLooser('cascadeWindow', 5, 10)).toBe(true);
  });
});

describe('limits: what a task may ask for', () => {
  it('names each field a task loosens, with the agent’s limit and the way to raise it', () => {
    const loosened = loosenedLimits('a1', agent, { tokenBudget: 1e9, maxTicks: 10, cascadeWindow: 2 });
    expect(loosened?.fields).toEqual([
      { field: 'tokenBudget', limit: 1000, asked: 1e9 },
      { field: 'cascadeWindow', limit: 10, asked: 2 },
    ]);
    expect(loosened?.issues).toEqual([
      "safety.tokenBudget: 1000000000 is looser than agent a1's limit 1000; raising tokenBudget needs admin",
      "safety.cascadeWindow: 2 is looser than agent a1's limit 10; lowering cascadeWindow needs admin",
    ]);
    expect(loosened?.message).toMatch(/^raising tokenBudget, lowering cascadeWindow needs admin/);
    expect(loosened?.message).toContain('starry limits a1 --token-budget 1000000000 --cascade-window 2');
    expect(() => refuseLooserLimits('a1', agent, { tokenBudget: 1001 })).toThrow(PermissionDeniedError);
  });

  it('lets a task tighten or keep every limit, or give none', () => {
    expect(loosenedLimits('a1', agent, {})).toBeUndefined();
    expect(loosenedLimits('a1', agent, agent)).toBeUndefined();
    expect(
      loosenedLimits('a1', agent, { tokenBudget: 1, maxTicks: 1, cascadeWindow: 1000, cascadeErrors: 1 }),
    ).toBeUndefined();
  });

  it('runs a task with the tighter of each given field and the agent’s, and the agent’s for the rest', () => {
    expect(runLimits(agent, {})).toEqual(agent);
    expect(runLimits(agent, { tokenBudget: 500, cascadeWindow: 20 })).toEqual({
      ...agent,
      tokenBudget: 500,
      cascadeWindow: 20,
    });
    // Looser than the agent now (an admin lowered it after the submit): the agent's.
    expect(runLimits(agent, { tokenBudget: 5000, cascadeWindow: 5 })).toEqual(agent);
  });

  it('gives a new agent the defaults with its first task’s limits, refusing a pair that does not fit', () => {
    expect(firstLimits({ tokenBudget: 1e9 })).toMatchObject({ tokenBudget: 1e9, maxTicks: 50, cascadeWindow: 10 });
    expect(() => firstLimits({ cascadeErrors: 11 })).toThrow(
      /safety\.cascadeErrors: cascadeErrors must be <= cascadeWindow/,
    );
  });
});

describe('limits: the cost budget', () => {
  it('lets a task set or lower a cost budget, never raise it, and runs with the tighter one', () => {
    // No cost budget is unbounded: a task may give one, and runs with it.
    expect(loosenedLimits('a1', agent, { costBudgetUsd: 5 })).toBeUndefined();
    expect(runLimits(agent, { costBudgetUsd: 5 }).costBudgetUsd).toBe(5);
    const capped = { ...agent, costBudgetUsd: 2 };
    expect(loosenedLimits('a1', capped, { costBudgetUsd: 3 })?.message).toContain('raising costBudgetUsd needs admin');
    expect(loosenedLimits('a1', capped, { costBudgetUsd: 3 })?.message).toContain('--cost-budget-usd 3');
    expect(runLimits(capped, { costBudgetUsd: 1.5 }).costBudgetUsd).toBe(1.5);
    expect(runLimits(capped, {}).costBudgetUsd).toBe(2);
  });

  it('lets an admin raise it, and says from none', () => {
    expect(changeLimits(agent, { costBudgetUsd: 10 })).toEqual({
      limits: { ...agent, costBudgetUsd: 10 },
      from: { costBudgetUsd: undefined },
      to: { costBudgetUsd: 10 },
    });
    expect(() => changeLimits(agent, { costBudgetUsd: -1 })).toThrow(/safety\.costBudgetUsd: must be > 0/);
  });
});

describe('limits: an admin’s change', () => {
  it('returns the new limits and what changed, from what', () => {
    expect(changeLimits(agent, { tokenBudget: 5000, maxTicks: agent.maxTicks })).toEqual({
      limits: { ...agent, tokenBudget: 5000 },
      from: { tokenBudget: 1000 },
      to: { tokenBudget: 5000 },
    });
  });

  it('refuses an unknown field, a non-number, a value above the schema’s bound, naming it', () => {
    expect(() => changeLimits(agent, { tokenBudgett: 5 } as never)).toThrow(/Unrecognized key: "tokenBudgett"/);
    expect(() => changeLimits(agent, { maxTicks: 'many' } as never)).toThrow(/safety\.maxTicks: must be a number/);
    expect(() => changeLimits(agent, { maxTicks: 100_001 })).toThrow(/safety\.maxTicks: must be <= 100000/);
    expect(() => changeLimits(agent, { maxTicks: 1.5 })).toThrow(/safety\.maxTicks: must be a whole number/);
  });
});
