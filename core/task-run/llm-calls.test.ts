import type { TaskRunInput } from './io';
import { inputEstimate, llmRequest, summaryDue, type CallParts } from './llm-calls';
import { partsOf, read } from './test-support';

const price = { inputPerMTok: 2.5, cachedInputPerMTok: 1.25, outputPerMTok: 10 };

/** A run's call parts at tick 1. */
function partsAt1(...args: Parameters<typeof partsOf>): CallParts {
  const run = partsOf(...args);
  run.checkpoint.ticks = 1;
  return run;
}

describe("the tick's LLM call", () => {
  it('asks with the anchored context, every offered tool and the output the budget allows, and counts the call', () => {
    const run = partsAt1({}, { agentTokensUsed: 99_000 });
    const step = llmRequest(run);
    expect(step).toMatchObject({
      request: {
        llm: { provider: 'scripted', file: 'x.json' },
        agentId: 'a1',
        taskId: 'task-1',
        callNumber: 1,
        tick: 1,
        maxOutputTokens: 1000,
        maxRetryDelayMs: 30_000,
      },
    });
    expect('request' in step && step.request.messages).toHaveLength(2);
    expect('request' in step && step.request.tools?.map((t) => t.name)).toContain('shell.run');
    expect(run.checkpoint.callNumber).toBe(1);
  });

  it('is refused by the budget once the agent spent it, with what it weighed, and not counted', () => {
    const run = partsAt1({ safety: { tokenBudget: 1000 } }, { agentTokensUsed: 900 });
    run.spend.data.runTokens = 100;
    expect(llmRequest(run)).toEqual({
      lock: expect.objectContaining({ reason: expect.objectContaining({ code: 'BUDGET_EXHAUSTED' }) }),
      usage: { tokensUsed: 1000, costUsd: 0 },
    });
    expect(run.checkpoint.callNumber).toBe(0);
  });

  it('fails without starting when a cost budget has no price to count against', () => {
    const step = llmRequest(partsAt1({ safety: { costBudgetUsd: 1 } }));
    expect(step).toMatchObject({ error: { code: 'EINVAL', source: 'cost budget' } });
    expect(llmRequest(partsAt1({ safety: { costBudgetUsd: 1 } }, { price }))).toHaveProperty('request');
  });

  it("fails when its context cannot be one payload, before the budget's verdict", () => {
    const run = partsAt1({ safety: { tokenBudget: 1000 } }, { agentTokensUsed: 1000, goal: 'x'.repeat(2_000_000) });
    expect(llmRequest(run)).toMatchObject({ error: { code: 'E_OUTPUT_TOO_LARGE' } });
  });

  it('estimates what the call sends, more with more tools offered', () => {
    const run = partsAt1();
    const all = inputEstimate(run);
    expect(inputEstimate({ ...run, tools: [] })).toBeLessThan(all);
  });
});

describe('the summary call before it', () => {
  /** A store-mode run with the summarize strategy in a small window, at the first tick whose window drops turns. */
  function dueRun(over: Partial<TaskRunInput> = {}, safety = {}) {
    const run = partsAt1({ contextTokens: 4000, context: { strategy: 'summarize' }, safety }, over, true);
    for (let n = 1; n < 40; n++) {
      if (summaryDue(run)) return run;
      const step = llmRequest(run);
      if (!('request' in step)) throw new Error('no call');
      run.window.answered(run.checkpoint, {
        toolCalls: [read(`c${n}`)],
        usage: { inputTokens: 10, outputTokens: 5 },
        message: { role: 'assistant', ref: `answer-${n}`, bytes: 300 },
        context: { ref: `manifest-${n}`, sentBytes: 8000 },
      });
      run.checkpoint.messages.push({ role: 'tool', ref: `result-${n}`, bytes: 1000 });
      run.checkpoint.ticks++;
    }
    throw new Error('no summary due in 40 ticks');
  }

  it('is due when the window drops turns, for the call the tick makes next', () => {
    const run = dueRun();
    expect(summaryDue(run)).toMatchObject({
      tick: run.checkpoint.ticks,
      callNumber: run.checkpoint.callNumber + 1,
      covers: { calls: [1, expect.any(Number)] },
    });
  });

  it('is not due without the store, nor when the budget is spent or has no price to weigh', () => {
    expect(summaryDue(partsAt1({ context: { strategy: 'summarize' } }))).toBeUndefined();
    const spent = dueRun({}, { tokenBudget: 100_000 });
    spent.spend.data.runTokens = 100_000;
    expect(summaryDue(spent)).toBeUndefined();
    const unpriced = dueRun({ price });
    unpriced.input.config.safety.costBudgetUsd = 1;
    delete unpriced.input.price;
    expect(summaryDue(unpriced)).toBeUndefined();
  });
});
