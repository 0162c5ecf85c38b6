import { Spend, unpriced, unpricedError } from './spend';
import { configOf, roundTrip } from './test-support';

const price = { inputPerMTok: 2.5, cachedInputPerMTok: 1.25, outputPerMTok: 10 };
const totals = () => ({ tokensUsed: 100 }) as { tokensUsed: number; cachedInputTokens?: number; costUsd?: number };

describe('Spend', () => {
  it("counts a call's tokens for the run and for the task", () => {
    const spend = Spend.of();
    const task = totals();
    spend.add({ inputTokens: 10, outputTokens: 5 }, undefined, task);
    expect(spend.data).toEqual({ runTokens: 15, runCachedInputTokens: 0, runCostUsd: 0 });
    // Without cached tokens or a price, the task's totals say nothing of them.
    expect(task).toEqual({ tokensUsed: 115 });
  });

  it('counts cached input tokens, and with a price what the calls cost, rounded to the nano-dollar', () => {
    const spend = Spend.of();
    const task = totals();
    for (let i = 0; i < 3; i++)
      spend.add({ inputTokens: 1000, cachedInputTokens: 400, outputTokens: 100 }, price, task);
    // 600 × 2.5 + 400 × 1.25 + 100 × 10 micro-dollars a call
    expect(spend.data).toEqual({ runTokens: 3300, runCachedInputTokens: 1200, runCostUsd: 0.009 });
    expect(task).toEqual({ tokensUsed: 3400, cachedInputTokens: 1200, costUsd: 0.009 });
  });

  it('takes over what the run before it counted when the task continued as new', () => {
    const continued = {
      runTokens: 30,
      runCostUsd: 0.5,
      allowanceStart: 0,
      received: 0,
      omitted: { toolCalls: 0, injections: 0 },
    };
    expect(Spend.of(continued).data).toEqual({ runTokens: 30, runCachedInputTokens: 0, runCostUsd: 0.5 });
  });

  it("weighs the agent's usage before this run with this run's, and the model's price when there is one", () => {
    const spend = new Spend({ runTokens: 200, runCachedInputTokens: 0, runCostUsd: 0.25 });
    expect(spend.usage({ agentTokensUsed: 800, agentCostUsd: 1 })).toEqual({ tokensUsed: 1000, costUsd: 1.25 });
    expect(spend.usage({ agentTokensUsed: 800, price })).toEqual({ tokensUsed: 1000, costUsd: 0.25, price });
  });

  it('lets the budget cap the next call to what is left, and lock once it is spent', () => {
    const { safety } = configOf({ safety: { tokenBudget: 1000 } });
    const spend = new Spend({ runTokens: 100, runCachedInputTokens: 0, runCostUsd: 0 });
    const low = spend.beforeCall(safety, { agentTokensUsed: 800 });
    expect(low).toMatchObject({ usage: { tokensUsed: 900 }, budget: { maxOutputTokens: 100 } });
    expect(low.budget.lock).toBeUndefined();
    expect(spend.beforeCall(safety, { agentTokensUsed: 900 }).budget.lock?.reason.code).toBe('BUDGET_EXHAUSTED');
  });

  it('reports cached tokens and cost only when there are some', () => {
    expect(Spend.of().reported()).toEqual({});
    expect(new Spend({ runTokens: 5, runCachedInputTokens: 2, runCostUsd: 0.1 }).reported()).toEqual({
      runCachedInputTokens: 2,
      runCostUsd: 0.1,
    });
  });

  it('serializes and deserializes: a copy goes on counting where the original stopped', () => {
    const spend = Spend.of();
    spend.add({ inputTokens: 10, outputTokens: 5 }, price, totals());
    const copy = new Spend(roundTrip(spend.data));
    for (const s of [spend, copy]) s.add({ inputTokens: 10, outputTokens: 5 }, price, totals());
    expect(copy.data).toEqual(spend.data);
  });
});

describe('a cost budget without a price', () => {
  it('cannot be weighed: only a cost budget needs the price', () => {
    expect(unpriced(configOf({ safety: { costBudgetUsd: 1 } }), undefined)).toBe(true);
    expect(unpriced(configOf({ safety: { costBudgetUsd: 1 } }), price)).toBe(false);
    expect(unpriced(configOf(), undefined)).toBe(false);
  });

  it('fails the task saying which model has no price and what to do', () => {
    expect(unpricedError(configOf())).toMatchObject({
      code: 'EINVAL',
      kind: 'execution',
      source: 'cost budget',
      message: expect.stringContaining('no price for its model scripted:x.json'),
      suggestion: expect.stringContaining('STARRY_PRICING'),
    });
  });
});
