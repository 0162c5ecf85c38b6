import { parseAgentConfig, parseTaskConfig } from '../config';
import { PermissionDeniedError, RefusedError } from '../errors';
import { limitsInputSchema } from '../limits';
import { LIMITS } from '../payloads';
import {
  addTokens,
  adoptFirstConfig,
  configForRun,
  refuseLimitsChange,
  refuseTaskConfig,
  rulesText,
  setAgentLimits,
  type LimitsData,
} from './agent-limits';

const config = parseAgentConfig({ safety: { tokenBudget: 1000 } }, 'scripted:x.json');
const task = (raw: object = {}) => parseTaskConfig(raw, 'scripted:y.json');
const withConfig = (): LimitsData => ({ config });

describe('agent limits: its config, and the limits only an admin loosens', () => {
  it('takes its first task’s config when it has none, the defaults filling in the limits', () => {
    const d: LimitsData = {};
    expect(() => refuseTaskConfig(d, 'a1', undefined)).toThrow(
      'agent a1 has no config yet: submit its first task with one (it names the LLM)',
    );
    expect(() => refuseTaskConfig(d, 'a1', task({ safety: { cascadeErrors: 20 } }))).toThrow(
      /cascadeErrors must be <= cascadeWindow/,
    );
    adoptFirstConfig(d, task({ safety: { tokenBudget: 1e9 } }));
    expect(d.config?.safety).toMatchObject({ tokenBudget: 1e9, maxTicks: 50 });
    adoptFirstConfig(d, task({ guide: 'neutral' }));
    expect(d.config?.guide).toBe('pain');
  });

  it('refuses a task config looser than the agent’s limits, counting them without the tokens a human added', () => {
    const d = withConfig();
    addTokens(d, 500);
    expect(d).toMatchObject({ addedTokens: 500, config: { safety: { tokenBudget: 1500 } } });
    expect(() => refuseTaskConfig(d, 'a1', task({ safety: { tokenBudget: 1000 } }))).not.toThrow();
    expect(() => refuseTaskConfig(d, 'a1', task({ safety: { tokenBudget: 1001 } }))).toThrow(PermissionDeniedError);
    expect(() => refuseTaskConfig(d, 'a1', undefined)).not.toThrow();
    addTokens(d, 0);
    expect(d.addedTokens).toBe(500);
  });

  it('runs a task with its own config but the tighter limits and the agent’s rules, its own rules added', () => {
    const d: LimitsData = {
      config: parseAgentConfig(
        { safety: { tokenBudget: 1000 }, tools: { approval: { ask: ['shell.run'] } } },
        'scripted:x.json',
      ),
      addedTokens: 100,
    };
    const own = task({
      guide: 'neutral',
      safety: { tokenBudget: 400, maxTicks: 5 },
      tools: { approval: { ask: ['fs.write'] } },
    });
    const run = configForRun(d, 'a1', 'task-1', own);
    expect(run).toMatchObject({ guide: 'neutral', safety: { tokenBudget: 500, maxTicks: 5 } });
    expect(run.tools.approval?.ask).toEqual(['shell.run', 'fs.write']);
    // The agent takes the task's config but keeps its own limits and rules.
    expect(d.config).toMatchObject({ guide: 'neutral', safety: { tokenBudget: 1000, maxTicks: 50 } });
    expect(d.config?.tools.approval?.ask).toEqual(['shell.run']);
    expect(configForRun(d, 'a1', 'task-2', undefined).safety).toEqual(d.config?.safety);
    expect(() => configForRun({}, 'a1', 'task-3', undefined)).toThrow('agent a1 has no config for task task-3');
  });

  it('records who changed the limits and the rules, from what, bounded, and says what changed', () => {
    const d = withConfig();
    addTokens(d, 500);
    const r = setAgentLimits(d, 'a1', { safety: { tokenBudget: 5000 }, by: 'alice', note: 'migration' }, 'task-1');
    expect(r).toMatchObject({ changed: ['tokenBudget'], limits: { tokenBudget: 5000 } });
    expect(r.message).toBe(
      "agent a1's limits changed: tokenBudget 1500 → 5000 (task task-1 keeps the limits it started with; the next task runs with these)",
    );
    expect(d.addedTokens).toBe(0);
    expect(d.limitChanges).toEqual([
      { by: 'alice', note: 'migration', from: { tokenBudget: 1500 }, to: { tokenBudget: 5000 } },
    ]);
    const rules = setAgentLimits(
      d,
      'a1',
      { safety: {}, approval: { ask: ['fs.write'], deny: [], timeoutMs: 60_000 } },
      undefined,
    );
    expect(rules.message).toBe("agent a1's limits changed: approval rules none → ask [fs.write] deny []");
    expect(d.limitChanges?.at(-1)).toMatchObject({ by: 'an admin', approval: { to: { ask: ['fs.write'] } } });
    expect(setAgentLimits(d, 'a1', { safety: {} }, undefined).message).toBe(
      "agent a1's limits already are these: nothing changed",
    );
    for (let i = 0; i < LIMITS.limitChanges + 1; i++)
      setAgentLimits(d, 'a1', { safety: { maxTicks: 10 + i } }, undefined);
    expect(d.limitChanges).toHaveLength(LIMITS.limitChanges);
  });

  it('refuses a change before the agent has limits, and one that does not fit, changing nothing', () => {
    expect(() => refuseLimitsChange({}, 'a2', { safety: { maxTicks: 5 } })).toThrow(RefusedError);
    expect(() => refuseLimitsChange({}, 'a2', { safety: { maxTicks: 5 } })).toThrow(
      /agent a2 has no limits yet: its first task sets them/,
    );
    const d = withConfig();
    expect(() => setAgentLimits(d, 'a1', { safety: { cascadeErrors: 11 } }, undefined)).toThrow(
      /cascadeErrors must be <= cascadeWindow/,
    );
    expect(d).toEqual(withConfig());
  });

  it('reads approval rules as people write them', () => {
    expect(rulesText(undefined)).toBe('none');
    expect(rulesText({ ask: ['shell.run'], deny: ['http.get'] })).toBe('ask [shell.run] deny [http.get]');
  });

  it('is plain data that survives JSON, as continue-as-new carries it', () => {
    const d = withConfig();
    addTokens(d, 5);
    setAgentLimits(d, 'a1', { safety: { maxTicks: 7 }, by: 'root' }, undefined);
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
  });
});

describe("an agent's shared budget: its own limit", () => {
  const pooled = (): LimitsData => ({ config: parseAgentConfig({ budget: 'team' }, 'scripted:x.json') });

  it('is kept when a later task leaves it out, so dropping it from the config runs unmetered never', () => {
    const d = pooled();
    expect(() => refuseTaskConfig(d, 'a1', task())).not.toThrow();
    expect(configForRun(d, 'a1', 'task-2', task()).budget).toBe('team');
    expect(d.config?.budget).toBe('team');
  });

  it('refuses a later task naming another budget, saying who may change it', () => {
    const d = pooled();
    const other = () => refuseTaskConfig(d, 'a1', task({ budget: 'elsewhere' }));
    expect(other).toThrow(PermissionDeniedError);
    expect(other).toThrow(/budget: 'elsewhere' is not agent a1's shared budget 'team'; changing it needs admin/);
    expect(other).toThrow(/starry limits a1 --budget elsewhere/);
    expect(() => refuseTaskConfig(d, 'a1', task({ budget: 'team' }))).not.toThrow();
  });

  it('is joined by a later task of an agent without one, and is the agent’s from then on', () => {
    const d = withConfig();
    expect(() => refuseTaskConfig(d, 'a1', task({ budget: 'team' }))).not.toThrow();
    expect(configForRun(d, 'a1', 'task-2', task({ budget: 'team' })).budget).toBe('team');
    expect(() => refuseTaskConfig(d, 'a1', task({ budget: 'elsewhere' }))).toThrow(PermissionDeniedError);
  });

  it('is changed or dropped by an admin, recorded with who did it', () => {
    const d = pooled();
    const moved = setAgentLimits(d, 'a1', { safety: {}, budget: 'ops', by: 'alice' }, undefined);
    expect(moved).toMatchObject({ budget: 'ops', changed: ['budget'] });
    expect(moved.message).toMatch(/shared budget team → ops/);
    expect(d.limitChanges?.at(-1)).toMatchObject({ by: 'alice', budget: { from: 'team', to: 'ops' } });
    const dropped = setAgentLimits(d, 'a1', { safety: {}, budget: null, by: 'alice' }, undefined);
    expect(dropped.changed).toEqual(['budget']);
    expect(dropped).not.toHaveProperty('budget');
    expect(d.config).not.toHaveProperty('budget');
    expect(configForRun(d, 'a1', 'task-3', task()).budget).toBeUndefined();
  });
});

describe('a cost budget', () => {
  it('is removed again by an admin, recorded, and refused with a new one in the same change', () => {
    const d: LimitsData = { config: parseAgentConfig({ safety: { costBudgetUsd: 0.5 } }, 'scripted:x.json') };
    const out = setAgentLimits(d, 'a1', { safety: {}, costBudgetUsd: null, by: 'alice' }, undefined);
    expect(out.changed).toEqual(['costBudgetUsd']);
    expect(out.message).toMatch(/costBudgetUsd 0\.5 → none/);
    expect(out.limits).not.toHaveProperty('costBudgetUsd');
    expect(d.config?.safety).not.toHaveProperty('costBudgetUsd');
    expect(d.limitChanges?.at(-1)?.from).toEqual({ costBudgetUsd: 0.5 });
    expect(limitsInputSchema().safeParse({ safety: { costBudgetUsd: 1 }, costBudgetUsd: null }).success).toBe(false);
    expect(limitsInputSchema().parse({ costBudgetUsd: null })).toMatchObject({ costBudgetUsd: null, safety: {} });
  });
});
