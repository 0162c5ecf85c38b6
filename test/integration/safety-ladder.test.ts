/**
 * The SafetyMonitor through real workflows (docs/ARCHITECTURE.md#the-safety-ladder): every rung of the ladder, driven
 * by scripted
 * controllers on a real Temporal dev server, reported as `starry run --json` prints it (§6), and
 * decided the same way again on replay.
 */
import { REPEAT_ALERT_SENTENCE } from '../../core/guides/failure-facts';
import type { ChatMessage } from '../../core/llm';
import type { TaskResult } from '../../core/types';
import { startHarness, type Harness } from '../helpers/harness';
import { contractViolations, expectLocked, runScenario, SCENARIOS, type ScenarioRun } from '../helpers/scenarios';
import {
  llmInputs,
  llmRequests,
  replayAll,
  resolveLlmInput,
  settledHistory,
  toolInputs,
} from '../helpers/workflow-history';
import { agentWorkflowId } from '../../workflows/messages';

// Replays start a replay worker each: more than jest's default 5 s.
jest.setTimeout(60_000);

let h: Harness;
beforeAll(async () => {
  // Cascade alerts go to a quiet log sink here; alerts.test.ts checks the sinks themselves.
  h = await startHarness({ name: 'ladder', activities: { alerts: { log: () => undefined } } });
});
afterAll(async () => h?.stop());

const injections = (r: TaskResult) => r.injections.map((i) => [i.tick, i.kind]);
const calls = (r: TaskResult) => r.toolCalls.map((c) => [c.tick, c.name, c.status, c.error?.code]);
const taskHistory = (run: ScenarioRun) => settledHistory(h.agents.client, run.workflowId);

/** The messages the model saw on LLM call `n` (1-based) of the run's task. */
async function messagesOfCall(run: ScenarioRun, n: number): Promise<ChatMessage[]> {
  const request = llmInputs(await taskHistory(run))[n - 1];
  if (!request) throw new Error(`LLM call #${n} of ${run.workflowId} was never scheduled`);
  return (await resolveLlmInput(request)).messages;
}

/** Roles and kinds of the last messages: 'tool', 'user:<injection kind>', 'assistant'. */
function tail(messages: ChatMessage[], r: TaskResult, count: number): string[] {
  return messages.slice(-count).map((m) => {
    if (m.role !== 'user') return m.role;
    const injected = r.injections.find((i) => i.text === m.text);
    return `user:${injected?.kind ?? '?'}`;
  });
}

async function expectReplays(run: ScenarioRun): Promise<void> {
  const reports = await replayAll(h.agents.client, [run.workflowId, agentWorkflowId(run.agentId)]);
  expect(reports.map((r) => ({ workflowId: r.workflowId, ok: r.ok, error: r.error }))).toEqual([
    { workflowId: run.workflowId, ok: true, error: undefined },
    { workflowId: agentWorkflowId(run.agentId), ok: true, error: undefined },
  ]);
}

describe('repeated failure', () => {
  it('raises the repeat alert on exactly the third identical failure, after that turn’s tool result', async () => {
    const run = await runScenario(h, SCENARIOS.repeatAlert);
    const r = run.result;
    expect(contractViolations(r)).toEqual([]);
    expect(r).toMatchObject({ outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ticks: 4, finalText: 'Done.' });
    expect(r.reason).toBeUndefined();
    expect(calls(r)).toEqual([1, 2, 3].map((t) => [t, 'fs.read', 'failed', 'EPERM']));
    expect(new Set(r.toolCalls.map((c) => c.fingerprint)).size).toBe(1);
    expect(injections(r)).toEqual([
      [1, 'PAIN'],
      [2, 'PAIN'],
      [3, 'PAIN'],
      [3, 'REPEAT_ALERT'],
    ]);
    expect(r.injections[3]?.text).toContain(REPEAT_ALERT_SENTENCE);
    // The model's 4th call sees tick 3 as: its tool call, the pain result, then the alert.
    const seen = await messagesOfCall(run, 4);
    expect(tail(seen, r, 3)).toEqual(['assistant', 'tool', 'user:REPEAT_ALERT']);
  });

  it('locks the agent out (SAFETY_LOCKOUT, REPEATED_FAILURE) on the fourth identical failure and suspends the task', async () => {
    const run = await runScenario(h, SCENARIOS.repeatLockout);
    const r = run.result;
    await expectLocked(h, run, { agentState: 'SAFETY_LOCKOUT', code: 'REPEATED_FAILURE', ticks: 4 });
    expect(r.reason?.message).toMatch(/fs\.read failed 4 times in a row/);
    expect(calls(r)).toEqual([1, 2, 3, 4].map((t) => [t, 'fs.read', 'failed', 'EPERM']));
    expect(injections(r)).toEqual([
      [1, 'PAIN'],
      [2, 'PAIN'],
      [3, 'PAIN'],
      [3, 'REPEAT_ALERT'],
      [4, 'PAIN'],
    ]);
    await expectReplays(run);
  });

  it('locks out on the fourth of four identical calls in one turn, puts the alert after all the turn’s results and skips the rest', async () => {
    const run = await runScenario(h, SCENARIOS.repeatLockoutOneTurn);
    const r = run.result;
    await expectLocked(h, run, { agentState: 'SAFETY_LOCKOUT', code: 'REPEATED_FAILURE', ticks: 1 });
    expect(calls(r)).toEqual([
      [1, 'fs.read', 'failed', 'EPERM'],
      [1, 'fs.read', 'failed', 'EPERM'],
      [1, 'fs.read', 'failed', 'EPERM'],
      [1, 'fs.read', 'failed', 'EPERM'],
      [1, 'fs.list', 'skipped', 'E_SKIPPED'],
    ]);
    expect(injections(r)).toEqual([
      [1, 'PAIN'],
      [1, 'PAIN'],
      [1, 'PAIN'],
      [1, 'PAIN'],
      [1, 'REPEAT_ALERT'],
    ]);
    // The skipped fs.list never ran.
    expect(toolInputs(await taskHistory(run)).map((t) => t.name)).toEqual(['fs.read', 'fs.read', 'fs.read', 'fs.read']);
  });

  it('does not alert on A A B A', async () => {
    const run = await runScenario(h, SCENARIOS.aaba);
    const r = run.result;
    expect(contractViolations(r)).toEqual([]);
    expect(r).toMatchObject({ outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ticks: 5 });
    expect(calls(r).map((c) => c[3])).toEqual(['EPERM', 'EPERM', 'ENOENT', 'EPERM']);
    expect(injections(r)).toEqual([1, 2, 3, 4].map((t) => [t, 'PAIN']));
    const { counters } = await h.agents.status(run.agentId);
    expect(counters).toEqual({
      consecutiveFailures: 4,
      repeat: { toolName: 'fs.read', fingerprint: r.toolCalls[0]?.fingerprint, count: 1 },
      window: ['failed', 'failed', 'failed', 'failed'],
    });
  });

  it('does not alert on A A ok A A: the success resets the run of identical failures', async () => {
    const run = await runScenario(h, SCENARIOS.aaOkAa);
    const r = run.result;
    expect(contractViolations(r)).toEqual([]);
    expect(r).toMatchObject({ outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ticks: 6 });
    expect(calls(r).map((c) => c[2])).toEqual(['failed', 'failed', 'ok', 'failed', 'failed']);
    expect(injections(r)).toEqual([1, 2, 4, 5].map((t) => [t, 'PAIN']));
    const { counters } = await h.agents.status(run.agentId);
    expect(counters).toEqual({
      consecutiveFailures: 2,
      repeat: { toolName: 'fs.read', fingerprint: r.toolCalls[0]?.fingerprint, count: 2 },
      window: ['failed', 'failed', 'ok', 'failed', 'failed'],
    });
  });
});

describe('frustration and the error cascade', () => {
  it('skips the rest of the turn at 5 failures, then pauses the agent (ERROR_CASCADE) at the 8th failure on the next turn', async () => {
    const run = await runScenario(h, SCENARIOS.frustrationCascade);
    const r = run.result;
    await expectLocked(h, run, { agentState: 'ERROR_PAUSED', code: 'ERROR_CASCADE', ticks: 2 });
    expect(r.reason?.message).toMatch(/^EMERGENCY_HALT: 8 failures among the last 10 operations/);
    expect(calls(r)).toEqual([
      ...[1, 2, 3, 4, 5].map(() => [1, 'fs.read', 'failed', 'ENOENT']),
      [1, 'fs.read', 'skipped', 'E_SKIPPED'],
      ...[7, 8, 9].map(() => [2, 'fs.read', 'failed', 'ENOENT']),
      [2, 'fs.read', 'skipped', 'E_SKIPPED'],
    ]);
    expect(r.toolCalls.map((c) => (c.args as { path: string }).path)).toEqual(
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => `missing-${n}.txt`),
    );
    expect(injections(r)).toEqual([
      ...[1, 2, 3, 4, 5].map(() => [1, 'PAIN']),
      [1, 'FRUSTRATION'],
      ...[7, 8, 9].map(() => [2, 'PAIN']),
    ]);
    expect(r.injections[5]?.text).toContain('5 consecutive failures');

    const history = await taskHistory(run);
    // Skipped calls never reach a tool activity.
    expect(toolInputs(history).map((t) => (t.args as { path: string }).path)).toEqual(
      [1, 2, 3, 4, 5, 7, 8, 9].map((n) => `missing-${n}.txt`),
    );
    // The second call sees: the 6 tool results (5 pain, 1 skipped), then the intervention.
    const seen = (await llmRequests(history))[1]?.messages ?? [];
    expect(tail(seen, r, 8)).toEqual(['assistant', 'tool', 'tool', 'tool', 'tool', 'tool', 'tool', 'user:FRUSTRATION']);
    expect(seen.at(-2)).toMatchObject({ role: 'tool', text: expect.stringMatching(/not executed|skipped/i) });
    await expectReplays(run);
  });

  it('reaches the cascade with one failure a turn: frustration at tick 5, ERROR_PAUSED at tick 8', async () => {
    const run = await runScenario(h, SCENARIOS.cascadeOnePerTurn);
    const r = run.result;
    await expectLocked(h, run, { agentState: 'ERROR_PAUSED', code: 'ERROR_CASCADE', ticks: 8 });
    expect(calls(r).map((c) => c[2])).toEqual(Array(8).fill('failed'));
    expect(injections(r)).toEqual([
      [1, 'PAIN'],
      [2, 'PAIN'],
      [3, 'PAIN'],
      [4, 'PAIN'],
      [5, 'PAIN'],
      [5, 'FRUSTRATION'],
      [6, 'PAIN'],
      [7, 'PAIN'],
      [8, 'PAIN'],
    ]);
  });

  it('counts the cascade over the sliding window, across successes, without frustration', async () => {
    const run = await runScenario(h, SCENARIOS.cascadeAcrossSuccess);
    const r = run.result;
    await expectLocked(h, run, { agentState: 'ERROR_PAUSED', code: 'ERROR_CASCADE', ticks: 1 });
    expect(r.reason?.message).toMatch(/^EMERGENCY_HALT: 8 failures among the last 10 operations/);
    expect(calls(r).map((c) => c[2])).toEqual([
      'failed',
      'failed',
      'failed',
      'failed',
      'ok',
      'failed',
      'failed',
      'failed',
      'failed',
      'skipped',
    ]);
    expect(injections(r).map((i) => i[1])).toEqual(Array(8).fill('PAIN'));
  });
});

describe('loop cap and token budget', () => {
  it('locks out (SAFETY_LOCKOUT, LOOP_CAP) after exactly maxTicks 3 ticks', async () => {
    const run = await runScenario(h, SCENARIOS.loopCap);
    const r = run.result;
    await expectLocked(h, run, { agentState: 'SAFETY_LOCKOUT', code: 'LOOP_CAP', ticks: 3 });
    expect(calls(r)).toEqual([1, 2, 3].map((t) => [t, 'fs.list', 'ok', undefined]));
    expect(r.injections).toEqual([]);
    expect(llmInputs(await taskHistory(run))).toHaveLength(3);
  });

  it('stops (STOPPED, BUDGET_EXHAUSTED) before the call that would start over budget, with each call’s output capped to what is left', async () => {
    const run = await runScenario(h, SCENARIOS.budgetStop);
    const r = run.result;
    const budget = run.config.safety.tokenBudget!;
    expect(budget).toBe(1000);
    // The 4th tick starts, and stops at beforeLLMCall: no 4th call.
    const status = await expectLocked(h, run, { agentState: 'STOPPED', code: 'BUDGET_EXHAUSTED', ticks: 4 });
    const requests = llmInputs(await taskHistory(run));
    expect(requests.map((q) => q.maxOutputTokens)).toEqual([1000, 550, 100]);
    // 450 + 450 + (150 + 100): over the budget by no more than the last call's input.
    expect(r.tokensUsed).toBe(budget + 150);
    expect(status).toMatchObject({ tokensUsed: 1150, tokenBudget: 1000 });
    await expectReplays(run);
  });
});

describe('output anomalies', () => {
  it('fails invalid JSON, an unknown tool and schema-invalid arguments without executing them, and counts them', async () => {
    const run = await runScenario(h, SCENARIOS.outputAnomalies);
    const r = run.result;
    expect(contractViolations(r)).toEqual([]);
    expect(r).toMatchObject({ outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ticks: 2 });
    expect(calls(r)).toEqual([
      [1, 'fs.read', 'failed', 'E_INVALID_JSON'],
      [1, 'fs.delete', 'failed', 'E_UNKNOWN_TOOL'],
      [1, 'fs.read', 'failed', 'E_SCHEMA'],
    ]);
    expect(r.toolCalls.map((c) => c.error?.kind)).toEqual(['execution', 'execution', 'execution']);
    expect(r.toolCalls[0]?.args).toBe('{"path": "notes.md"');
    expect(injections(r)).toEqual([
      [1, 'PAIN'],
      [1, 'PAIN'],
      [1, 'PAIN'],
    ]);
    expect(toolInputs(await taskHistory(run))).toEqual([]);
    const { counters } = await h.agents.status(run.agentId);
    expect(counters).toMatchObject({ consecutiveFailures: 3, window: ['failed', 'failed', 'failed'] });
  });

  it('raises the repeat alert on the third identical invalid-JSON call', async () => {
    const run = await runScenario(h, SCENARIOS.repeatedBadJson);
    const r = run.result;
    expect(contractViolations(r)).toEqual([]);
    expect(r).toMatchObject({ outcome: 'COMPLETED', ticks: 4 });
    expect(calls(r)).toEqual([1, 2, 3].map((t) => [t, 'fs.read', 'failed', 'E_INVALID_JSON']));
    expect(injections(r)).toEqual([
      [1, 'PAIN'],
      [2, 'PAIN'],
      [3, 'PAIN'],
      [3, 'REPEAT_ALERT'],
    ]);
  });
});

describe('counters across tasks', () => {
  it('carries the counters into the next task of the same agent: two failures, then one more alerts in task 2', async () => {
    const first = await runScenario(h, SCENARIOS.carriedFirst);
    expect(first.result).toMatchObject({ outcome: 'COMPLETED', taskId: 'task-1' });
    expect(injections(first.result)).toEqual([
      [1, 'PAIN'],
      [2, 'PAIN'],
    ]);

    const second = await runScenario(h, SCENARIOS.carriedSecond, { agentId: first.agentId });
    const r = second.result;
    expect(contractViolations(r)).toEqual([]);
    expect(r).toMatchObject({
      outcome: 'COMPLETED',
      taskId: 'task-2',
      agentState: 'WAITING_FOR_EVENT',
      finalText: 'Still denied.',
    });
    expect(calls(r)).toEqual([[1, 'fs.read', 'failed', 'EPERM']]);
    expect(injections(r)).toEqual([
      [1, 'PAIN'],
      [1, 'REPEAT_ALERT'],
    ]);
    const { counters } = await h.agents.status(first.agentId);
    expect(counters).toMatchObject({ consecutiveFailures: 3, repeat: { count: 3 } });
    // The agent's history holds both child tasks; it and the second task replay.
    await expectReplays(second);
  });
});
