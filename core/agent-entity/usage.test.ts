import { initialCounters } from '../safety-counters';
import type { TaskResult } from '../types';
import { accountRun, progressUsage, resetCounters, spendOf, stillSpent, tokensWithRun, type UsageData } from './usage';

const fresh = (): UsageData => ({ tokensUsed: 0, counters: initialCounters() });
const failing = { consecutiveFailures: 2, repeat: null, window: ['failed' as const, 'failed' as const] };
const result = (toolCalls: TaskResult['toolCalls'] = []): TaskResult => ({
  agentId: 'a1',
  taskId: 'task-1',
  workflowId: 'wf-task-1',
  outcome: 'COMPLETED',
  agentState: 'EXECUTING',
  ticks: 1,
  tokensUsed: 50,
  toolCalls,
  injections: [],
});
const running = (over: object = {}) => ({
  task: { taskId: 'task-2', goal: 'g', priority: 5, seq: 2 },
  workflowId: 'wf-task-2',
  tick: 3,
  runTokens: 40,
  ...over,
});

describe('agent usage: spend and counters across tasks', () => {
  it('adds each run’s tokens, cached tokens and cost, and carries its counters on', () => {
    const d = fresh();
    accountRun(d, { runTokens: 50, counters: failing, result: result() });
    expect(d).toEqual({ tokensUsed: 50, counters: failing });
    accountRun(d, {
      runTokens: 25,
      runCachedInputTokens: 10,
      runCostUsd: 0.0015,
      counters: initialCounters(),
      result: result(),
    });
    accountRun(d, {
      runTokens: 25,
      runCachedInputTokens: 5,
      runCostUsd: 0.0001,
      counters: initialCounters(),
      result: result(),
    });
    expect(d).toEqual({ tokensUsed: 100, cachedInputTokens: 15, costUsd: 0.0016, counters: initialCounters() });
  });

  it('keeps the error code of a run’s last call when it failed', () => {
    const d = fresh();
    const call = { tick: 1, name: 'fs.read', args: {}, fingerprint: '0'.repeat(16) };
    const eperm = { code: 'EPERM' as const, kind: 'execution' as const, message: 'no', source: 'fs.read' };
    accountRun(d, { runTokens: 1, counters: failing, result: result([{ ...call, status: 'failed', error: eperm }]) });
    expect(d.lastErrorCode).toBe('EPERM');
    accountRun(d, { runTokens: 1, counters: failing, result: result([{ ...call, status: 'ok' }]) });
    expect(d.lastErrorCode).toBe('EPERM');
  });

  it('takes the running task’s counters and error code from its progress, and resets the counters at an unlock', () => {
    const d = fresh();
    progressUsage(d, { counters: failing, lastErrorCode: 'ENOENT' });
    progressUsage(d, { counters: failing });
    expect(d).toEqual({ tokensUsed: 0, counters: failing, lastErrorCode: 'ENOENT' });
    resetCounters(d);
    expect(d.counters).toEqual(initialCounters());
  });

  it('counts the running task’s tokens, cached tokens and cost so far, and shows no cost while none had a price', () => {
    const d: UsageData = { ...fresh(), tokensUsed: 100, cachedInputTokens: 20, costUsd: 0.1 };
    expect(tokensWithRun(d, running())).toBe(140);
    expect(spendOf(d, running({ runCachedInputTokens: 5, runCostUsd: 0.02 }), 2)).toEqual({
      cachedInputTokens: 25,
      costUsd: 0.12,
      costBudgetUsd: 2,
    });
    expect(spendOf(fresh(), undefined, undefined)).toEqual({});
    expect(spendOf(fresh(), running({ runCostUsd: 0.5 }), undefined)).toEqual({ costUsd: 0.5 });
  });

  it('says an unlocked budget stop will stop again while the budget is still spent', () => {
    const safety = { tokenBudget: 100, costBudgetUsd: 1 } as Parameters<typeof stillSpent>[4];
    const spent: UsageData = { ...fresh(), tokensUsed: 100, costUsd: 1 };
    const budget = { code: 'BUDGET_EXHAUSTED' as const, message: 'spent' };
    expect(stillSpent(spent, 'a1', budget, 0, safety)).toEqual([
      'the budget is still exhausted (100 of 100 tokens): the next LLM call will stop again; pass --add-tokens N to raise it',
    ]);
    expect(stillSpent(spent, 'a1', budget, 50, safety)).toEqual([]);
    expect(stillSpent({ ...spent, tokensUsed: 99 }, 'a1', budget, 0, safety)).toEqual([]);
    expect(stillSpent(spent, 'a1', { code: 'COST_BUDGET_EXHAUSTED', message: 'spent' }, 0, safety)).toEqual([
      'the cost budget is still spent ($1 of $1): the next LLM call will stop again; raise it first with starry limits a1 --cost-budget-usd N',
    ]);
    expect(stillSpent(spent, 'a1', { code: 'LOOP_CAP', message: 'cap' }, 0, safety)).toEqual([]);
  });

  it('is plain data that survives JSON, as continue-as-new carries it', () => {
    const d = fresh();
    accountRun(d, { runTokens: 25, runCachedInputTokens: 10, runCostUsd: 0.0015, counters: failing, result: result() });
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
  });
});
