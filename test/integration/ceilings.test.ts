/**
 * The worker's operator caps every agent's limits (`agentLimits` in the policy), a new agent's first
 * task included: a submit that would run past a ceiling is refused at submit naming the field and the
 * ceiling, and minting agent ids escapes nothing. An agent whose limits were set wider before the
 * ceilings keeps them, but each of its tasks must fit: it narrows them itself, or an admin narrows the agent's.
 * An agent's shared budget is its limit: a later task that leaves it out still draws from it, one that
 * names another is refused, and only an admin changes or drops it. Prices are the operator's: a task's
 * config cannot price its model below the worker's STARRY_PRICING. An approval rule naming a tool the
 * worker does not have is refused like a typo in tools.allow, rather than fail open.
 */
import path from 'node:path';
import { realpathSync } from 'node:fs';
import { NotFoundError, RefusedError } from '../../client/agent-client';
import { PermissionDeniedError } from '../../core/errors';
import { eventually } from '../../dev/poll';
import { done } from '../helpers/scenarios';
import { parseWorkerPolicy, type WorkerPolicyInput } from '../../core/worker-policy';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';

const DONE = writeScript([{ text: 'Done.' }]);
const ws = realpathSync(makeWorkspace());
const policyOf = (overrides: Partial<WorkerPolicyInput> = {}) =>
  parseWorkerPolicy({ roots: [ws], llmDirs: [path.dirname(path.dirname(DONE))], allowRoot: true, ...overrides });
const ceilings = { tokenBudget: 20_000, maxTicks: 10 };
/** The worker's price of every scripted model here (`STARRY_PRICING`). */
const PRICE = { inputPerMTok: 2.5, cachedInputPerMTok: 1.25, outputPerMTok: 10 };

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    name: 'ceilings',
    activities: { policy: policyOf({ agentLimits: ceilings }), pricing: { 'scripted:turns.json': PRICE } },
  });
});
afterAll(async () => {
  await h?.stop();
});

describe("the worker's agentLimits", () => {
  it("refuse a new agent's first task asking for more, naming the field and the ceiling, and leave no agent behind", async () => {
    const agentId = uniqueId('mint');
    const submitted = h.agents.submit(agentId, {
      goal: 'spend',
      config: scriptedConfig(DONE, ws, { safety: { tokenBudget: 1e9, maxTicks: 10 } }),
    });
    await expect(submitted).rejects.toBeInstanceOf(RefusedError);
    await expect(submitted).rejects.toThrow(
      new RegExp(`safety\\.tokenBudget: agent ${agentId} would run with 1000000000; the worker allows at most 20000`),
    );
    await expect(h.agents.status(agentId)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('refuse the defaults past a ceiling too, and run a first task within them', async () => {
    const agentId = uniqueId('defaults');
    await expect(
      h.agents.submit(agentId, {
        goal: 'answer',
        config: scriptedConfig(DONE, ws, { safety: { tokenBudget: 20_000 } }),
      }),
    ).rejects.toThrow(/safety\.maxTicks: agent .* would run with 50; the worker allows at most 10/);
    const { taskId } = await h.agents.submit(agentId, {
      goal: 'answer',
      config: scriptedConfig(DONE, ws, { safety: ceilings }),
    });
    expect(await h.agents.waitForTask(agentId, taskId)).toMatchObject({ outcome: 'COMPLETED', finalText: 'Done.' });
  });

  it('hold for an agent wider than ceilings set later: its tasks narrow to fit, or an admin narrows it', async () => {
    const before = await startHarness({ name: 'ceilings-before', activities: { policy: policyOf() } });
    let after: Harness | undefined;
    try {
      const agentId = uniqueId('wide');
      const first = await before.agents.submit(agentId, {
        goal: 'answer',
        config: scriptedConfig(DONE, ws, { safety: { tokenBudget: 1_000_000, maxTicks: 10 } }),
      });
      expect(await before.agents.waitForTask(agentId, first.taskId)).toMatchObject({ outcome: 'COMPLETED' });
      await before.stop();

      // The operator sets ceilings: the same task queue, a new worker.
      after = await startHarness({
        name: 'ceilings-after',
        taskQueue: before.taskQueue,
        activities: { policy: policyOf({ agentLimits: ceilings }) },
      });
      const refused = after.agents.submitExisting(agentId, { goal: 'again' });
      await expect(refused).rejects.toBeInstanceOf(RefusedError);
      await expect(refused).rejects.toThrow(
        /safety\.tokenBudget: agent .* would run with 1000000; the worker allows at most 20000/,
      );
      await expect(refused).rejects.toThrow(new RegExp(`starry limits ${agentId} --token-budget 20000`));

      const narrowed = await after.agents.submitExisting(agentId, {
        goal: 'again, narrowed',
        config: scriptedConfig(DONE, ws, { safety: { tokenBudget: 20_000 } }),
      });
      expect(await after.agents.waitForTask(agentId, narrowed.taskId)).toMatchObject({ outcome: 'COMPLETED' });
      // The agent's own limits are unchanged by the task; an admin narrows them.
      expect((await after.agents.status(agentId)).limits?.tokenBudget).toBe(1_000_000);
      await after.agents.setLimits(agentId, { safety: { tokenBudget: 20_000 }, by: 'ops' });
      const plain = await after.agents.submitExisting(agentId, { goal: 'again, as the agent is' });
      expect(await after.agents.waitForTask(agentId, plain.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    } finally {
      await after?.stop();
      await before.stop().catch(() => undefined);
    }
  });
});

describe("an agent's shared budget", () => {
  it('is drawn from by a later task that leaves it out, refused to one naming another, and changed by an admin only', async () => {
    const [name, other, agentId] = [uniqueId('pool'), uniqueId('other'), uniqueId('pooled')];
    await h.agents.budgets().create({ name, tokens: 100_000, leaseTokens: 1_000, by: 'ops' });
    await h.agents.budgets().create({ name: other, tokens: 100_000, leaseTokens: 1_000, by: 'ops' });
    const spent = async (budget: string, above: number) =>
      eventually(`${budget} spent above ${above}`, async () => {
        const s = await h.agents.budgets().show(budget);
        return s.spent > above ? s.spent : undefined;
      });
    const script = writeScript([done()]);
    const first = await h.agents.submit(agentId, {
      goal: 'answer',
      config: scriptedConfig(script, ws, { budget: name, safety: ceilings }),
    });
    expect(await h.agents.waitForTask(agentId, first.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    const afterFirst = await spent(name, 0);

    // The config leaves the budget out: the agent's still meters the task.
    const dropped = await h.agents.submitExisting(agentId, { goal: 'answer', config: scriptedConfig(script, ws) });
    expect(await h.agents.waitForTask(agentId, dropped.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    await spent(name, afterFirst);

    const moved = h.agents.submitExisting(agentId, {
      goal: 'answer',
      config: scriptedConfig(script, ws, { budget: other }),
    });
    await expect(moved).rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(moved).rejects.toThrow(new RegExp(`starry limits ${agentId} --budget ${other}`));

    const changed = await h.agents.setLimits(agentId, { safety: {}, budget: other, by: 'ops' });
    expect(changed).toMatchObject({ budget: other, changed: ['budget'] });
    const now = await h.agents.submitExisting(agentId, { goal: 'answer', config: scriptedConfig(script, ws) });
    expect(await h.agents.waitForTask(agentId, now.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    await spent(other, 0);
    expect((await h.agents.status(agentId)).limitChanges.at(-1)).toMatchObject({ budget: { from: name, to: other } });
  });
});

describe("the worker's prices", () => {
  it("refuse a later task pricing its model at 0 under an admin's cost budget, and run one pricing it higher", async () => {
    const agentId = uniqueId('priced');
    const first = await h.agents.submit(agentId, {
      goal: 'answer',
      config: scriptedConfig(DONE, ws, { safety: ceilings }),
    });
    expect(await h.agents.waitForTask(agentId, first.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    await h.agents.setLimits(agentId, { safety: { costBudgetUsd: 0.5 }, by: 'ops' });
    const free = { inputPerMTok: 0, cachedInputPerMTok: 0, outputPerMTok: 0 };
    const cheap = h.agents.submitExisting(agentId, {
      goal: 'spend for free',
      config: scriptedConfig(DONE, ws, { pricing: { 'scripted:turns.json': free } }),
    });
    await expect(cheap).rejects.toBeInstanceOf(RefusedError);
    await expect(cheap).rejects.toThrow(
      /pricing: the config prices scripted:turns\.json below the worker's STARRY_PRICING \(inputPerMTok 0 < 2\.5, cachedInputPerMTok 0 < 1\.25, outputPerMTok 0 < 10\)/,
    );
    const dearer = { inputPerMTok: 5, cachedInputPerMTok: 2.5, outputPerMTok: 20 };
    const ok = await h.agents.submitExisting(agentId, {
      goal: 'answer',
      config: scriptedConfig(DONE, ws, { pricing: { 'scripted:turns.json': dearer } }),
    });
    expect(await h.agents.waitForTask(agentId, ok.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    // An admin removes the cost budget again.
    const removed = await h.agents.setLimits(agentId, { costBudgetUsd: null, by: 'ops' });
    expect(removed.changed).toEqual(['costBudgetUsd']);
    expect((await h.agents.status(agentId)).costBudgetUsd).toBeUndefined();
  });
});

describe('an approval rule naming no tool', () => {
  it('is refused at submit like a typo in tools.allow, so fs.write never runs unasked', async () => {
    const agentId = uniqueId('typo');
    const submitted = h.agents.submit(agentId, {
      goal: 'write',
      config: scriptedConfig(DONE, ws, { safety: ceilings, tools: { approval: { ask: ['fs.wirte'], deny: [] } } }),
    });
    await expect(submitted).rejects.toBeInstanceOf(RefusedError);
    await expect(submitted).rejects.toThrow(
      /tools\.approval\.ask: 'fs\.wirte' is not a tool of this worker \(its tools: fs\.read, fs\.write/,
    );
    await expect(h.agents.status(agentId)).rejects.toBeInstanceOf(NotFoundError);
  });
});
