import { parseAgentConfig } from '../config';
import { firstLimits, runLimits } from '../limits';
import { ceilingRefusal, pastCeilings } from './narrow-limits';
import { parseWorkerPolicy } from './schema';

const policy = parseWorkerPolicy({
  roots: ['/srv/ws'],
  agentLimits: { tokenBudget: 200_000, maxTicks: 40, cascadeWindow: 5, costBudgetUsd: 5 },
});
const within = { tokenBudget: 200_000, maxTicks: 40, cascadeWindow: 5, cascadeErrors: 5, costBudgetUsd: 5 };

describe('agentLimits in the worker policy', () => {
  it('is parsed like a task config safety and refused naming the field when invalid', () => {
    expect(policy.agentLimits).toEqual({ tokenBudget: 200_000, maxTicks: 40, cascadeWindow: 5, costBudgetUsd: 5 });
    expect(() => parseWorkerPolicy({ roots: ['/srv/ws'], agentLimits: { tokenBudget: -1 } })).toThrow(
      /agentLimits.tokenBudget: must be > 0/,
    );
    expect(() => parseWorkerPolicy({ roots: ['/srv/ws'], agentLimits: { tokenBudgt: 5 } })).toThrow(/agentLimits/);
  });

  it("caps a new agent's first limits, its defaults included", () => {
    expect(pastCeilings(policy.agentLimits, firstLimits(within))).toEqual([]);
    expect(pastCeilings(policy.agentLimits, firstLimits({ ...within, tokenBudget: 1e9 }))).toEqual([
      { field: 'tokenBudget', value: 1e9, ceiling: 200_000 },
    ]);
    // Said nothing: the defaults (100000 tokens, 50 ticks, a window of 10, no cost budget) are checked as well.
    expect(pastCeilings(policy.agentLimits, firstLimits({})).map((p) => [p.field, p.value])).toEqual([
      ['maxTicks', 50],
      ['costBudgetUsd', Infinity],
    ]);
  });

  it('caps every threshold the way it is looser: a smaller cascade window trips later', () => {
    const past = pastCeilings(
      policy.agentLimits,
      firstLimits({ ...within, cascadeWindow: 3, cascadeErrors: 3, repeatThreshold: 100 }),
    );
    expect(past).toEqual([{ field: 'cascadeWindow', value: 3, ceiling: 5 }]);
    const all = parseWorkerPolicy({ roots: ['/srv'], agentLimits: { repeatThreshold: 3, frustrationThreshold: 5 } });
    expect(pastCeilings(all.agentLimits, firstLimits({ repeatThreshold: 100, frustrationThreshold: 100 }))).toEqual([
      { field: 'repeatThreshold', value: 100, ceiling: 3 },
      { field: 'frustrationThreshold', value: 100, ceiling: 5 },
    ]);
  });

  it('holds for an existing agent wider than the ceilings unless the task narrows its run to fit', () => {
    const wide = parseAgentConfig(
      { safety: { tokenBudget: 1e9, maxTicks: 40, costBudgetUsd: 5, cascadeWindow: 5, cascadeErrors: 5 } },
      'scripted:/x',
    ).safety;
    expect(pastCeilings(policy.agentLimits, runLimits(wide, {})).map((p) => p.field)).toEqual(['tokenBudget']);
    expect(pastCeilings(policy.agentLimits, runLimits(wide, { tokenBudget: 150_000 }))).toEqual([]);
  });

  it('is refused in words that name each field, its ceiling and what helps', () => {
    const past = pastCeilings(
      policy.agentLimits,
      firstLimits({ ...within, tokenBudget: 1e9, cascadeWindow: 2, cascadeErrors: 2 }),
    );
    const fresh = ceilingRefusal('a1', false, past);
    expect(fresh).toMatch(/wider than the worker's ceilings \(agentLimits in STARRY_WORKER_POLICY\)/);
    expect(fresh).toMatch(/safety\.tokenBudget: agent a1 would run with 1000000000; the worker allows at most 200000/);
    expect(fresh).toMatch(/safety\.cascadeWindow: agent a1 would run with 2; the worker allows at least 5/);
    expect(fresh).not.toMatch(/starry limits/);
    const existing = ceilingRefusal(
      'a1',
      true,
      pastCeilings(policy.agentLimits, firstLimits({ ...within, maxTicks: 90 })),
    );
    expect(existing).toMatch(/starry limits a1 --max-ticks 40 \(PATCH \/v1\/agents\/a1\/limits\)/);
    expect(ceilingRefusal('a1', false, pastCeilings(policy.agentLimits, firstLimits({})))).toMatch(
      /safety\.costBudgetUsd: agent a1 would run with none \(unbounded\); the worker allows at most 5/,
    );
  });

  it('is nothing without agentLimits', () => {
    expect(parseWorkerPolicy({ roots: ['/srv'] }).agentLimits).toBeUndefined();
    expect(pastCeilings(undefined, firstLimits({ tokenBudget: 1e9 }))).toEqual([]);
  });
});
