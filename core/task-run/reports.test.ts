import { TaskProgressSchema, TaskStatusSchema } from '../contract';
import type { PendingApproval } from '../approval';
import { details, PROGRESS_EVERY_TICKS, progress, progressDue, reported, soFar, status } from './reports';
import { partsOf } from './test-support';

const price = { inputPerMTok: 2.5, cachedInputPerMTok: 1.25, outputPerMTok: 10 };

/** A run two ticks in, 30 tokens used, one failed call. */
function runAt2(...args: Parameters<typeof partsOf>) {
  const run = partsOf(...args);
  run.checkpoint.ticks = 2;
  run.checkpoint.tokensUsed = 30;
  run.spend.data.runTokens = 30;
  run.checkpoint.toolCalls.push({
    tick: 2,
    name: 'fs.read',
    args: { path: '/root/x' },
    fingerprint: 'f',
    status: 'failed',
    error: { code: 'EPERM', kind: 'execution', source: 'fs.read', message: 'denied' },
  });
  run.counters.failedWith('EPERM');
  return run;
}

describe('what a running task reports', () => {
  it('has everything its result will have so far, a cost only with a price, omitted records only when some were', () => {
    const run = runAt2();
    expect(soFar(run)).toEqual({
      agentId: 'a1',
      taskId: 'task-1',
      workflowId: 'agent-a1-task-1',
      ticks: 2,
      tokensUsed: 30,
      toolCalls: run.checkpoint.toolCalls,
      injections: [],
    });
    const priced = runAt2({}, { price });
    priced.counters.omit({ toolCalls: 3, injections: 0 });
    priced.traceId = 'trace-1';
    expect(soFar(priced)).toMatchObject({ costUsd: 0, omitted: { toolCalls: 3, injections: 0 }, traceId: 'trace-1' });
  });

  it('answers the state query in the contract’s shape, with the counters, the last error and the halt', () => {
    const run = runAt2();
    run.halted = true;
    const s = status(run);
    expect(TaskStatusSchema.parse(s)).toEqual(s);
    expect(s).toMatchObject({
      running: true,
      halted: true,
      lastErrorCode: 'EPERM',
      counters: run.counters.data.counters,
    });
  });

  it('tells the agent its progress every PROGRESS_EVERY_TICKS ticks, in the contract’s shape', () => {
    const run = runAt2({}, { price });
    expect(progressDue(run.checkpoint)).toBe(false);
    run.checkpoint.ticks = PROGRESS_EVERY_TICKS;
    expect(progressDue(run.checkpoint)).toBe(true);
    const p = progress(run);
    expect(TaskProgressSchema.parse(p)).toEqual(p);
    // With a price, the run's cost is reported even while it is 0.
    expect(p).toMatchObject({
      tick: PROGRESS_EVERY_TICKS,
      tokensUsed: 30,
      runTokens: 30,
      runCostUsd: 0,
      lastErrorCode: 'EPERM',
    });
    expect(progress(runAt2())).not.toHaveProperty('runCostUsd');
  });

  it('puts its search attributes’ facts together, dropping its state once it is closed', () => {
    const run = runAt2();
    expect(reported(run, 'EXECUTING', false)).toEqual({
      agentId: 'a1',
      agentState: 'EXECUTING',
      tick: 2,
      tokensUsed: 30,
      lastErrorCode: 'EPERM',
      lockReason: null,
    });
    expect(reported(run, 'SAFETY_LOCKOUT', true, 'LOOP_CAP')).toMatchObject({
      agentState: null,
      lockReason: 'LOOP_CAP',
    });
  });
});

describe('the Web UI details of a task', () => {
  it('show the tick against its cap, the agent’s tokens and cost against the budgets, the counters and the last tool', () => {
    const run = runAt2({ safety: { costBudgetUsd: 5 } }, { agentTokensUsed: 1000, agentCostUsd: 0.5, price });
    const text = details(run, [], { agentState: 'EXECUTING' });
    expect(text.split('\n')).toEqual([
      '### Task task-1 · EXECUTING',
      '',
      '- tick **2** (cap 50) · tokens **1030** / 100000 · cost **$0.5** / $5',
      '- consecutive failures **0** · window —',
      '- last tool: `fs.read` failed (EPERM)',
      '',
      '',
    ]);
  });

  it('say a suspended task waits for a human and how to resume it, and list the calls that wait for approval', () => {
    const run = runAt2();
    const waiting: PendingApproval = {
      callId: 't2.0',
      taskId: 'task-1',
      workflowId: 'agent-a1-task-1',
      tool: 'fs.write',
      args: { path: 'a' },
      tick: 2,
      rule: 'fs.write',
      from: 'config',
      askedAt: '2026-01-01T00:00:00.000Z',
      expiresAt: '2026-01-01T00:01:00.000Z',
    };
    const text = details(run, [waiting], {
      agentState: 'SAFETY_LOCKOUT',
      lockReason: 'LOOP_CAP',
      outcome: 'SUSPENDED',
    });
    expect(text).toContain('### Task task-1 · SUSPENDED · agent SAFETY_LOCKOUT');
    expect(text).toContain('`starry unlock a1 --resume` continues it');
    expect(text).toContain('- **LOOP_CAP**');
    expect(text).toContain('`starry approve a1 t2.0`');
  });
});
