/**
 * Governed autonomy (issue 32): tool calls that wait for a human's approval, through real workflows on
 * a real server. A waiting call holds no activity; a decision is an update on the agent, recorded with
 * who took it; a denial or an expiry is E_DENIED pain the model reads; a halt ends the wait.
 */
import os from 'node:os';
import { InvalidArgumentError, NotFoundError, RefusedError } from '../../client/agent-client';
import type { AgentConfigInput } from '../../core/config';
import { parseWorkerPolicy } from '../../core/worker-policy';
import { eventually } from '../../dev/poll';
import { agentWorkflowId } from '../../workflows/messages';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { activitiesIn, firstPayload, historyOf, llmRequests, settledHistory } from '../helpers/workflow-history';

jest.setTimeout(120_000);

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'approvals' });
});
afterAll(async () => {
  await h?.stop();
});

const DONE = { text: 'Done.', usage: { inputTokens: 10, outputTokens: 5 } };
const WRITE = (path: string, content = 'hello') => ({
  toolCalls: [{ name: 'fs.write', args: { path, content } }],
  usage: { inputTokens: 100, outputTokens: 10 },
});
const ASK = { tools: { approval: { ask: ['fs.write'] } } } satisfies AgentConfigInput;

function configFor(turns: unknown[], overrides: AgentConfigInput = ASK) {
  return scriptedConfig(writeScript(turns), makeWorkspace({ 'notes.md': '# Notes\n' }), overrides);
}

/** Submit, then wait until the agent lists a waiting call; returns it. */
async function waitingCall(h: Harness, agentId: string, turns: unknown[], overrides: AgentConfigInput = ASK) {
  const { taskId, workflowId } = await h.agents.submit(agentId, {
    goal: 'write a file',
    config: configFor(turns, overrides),
  });
  const call = await eventually(
    `a waiting call of ${agentId}`,
    async () => (await h.agents.approvals(agentId)).approvals[0],
  );
  return { taskId, workflowId, call };
}

const toolActivities = async (workflowId: string) =>
  activitiesIn(await historyOf(h.agents.client, workflowId)).filter((a) => a.activityType === 'tool');

describe('a call that needs approval', () => {
  it('waits with no activity while the agent is WAITING_FOR_APPROVAL, then runs with the approver’s edited args', async () => {
    const agentId = uniqueId('approve');
    const { taskId, workflowId, call } = await waitingCall(h, agentId, [WRITE('draft.md'), DONE]);
    expect(call).toMatchObject({
      agentId,
      callId: 't1.0',
      taskId,
      tool: 'fs.write',
      args: { path: 'draft.md', content: 'hello' },
      rule: 'fs.write',
      from: 'config',
    });
    const status = await h.agents.status(agentId);
    expect(status).toMatchObject({ agentState: 'WAITING_FOR_APPROVAL', approvals: [{ callId: 't1.0' }] });
    // Listed by state from the visibility store, like any state.
    await eventually('the agent listed as WAITING_FOR_APPROVAL', async () =>
      (await h.agents.listAgents({ state: 'WAITING_FOR_APPROVAL' })).agents.find((a) => a.agentId === agentId),
    );
    expect(await toolActivities(workflowId)).toEqual([]);

    const decision = await h.agents.decide(agentId, {
      callId: 't1.0',
      decision: 'approve',
      by: 'alice',
      note: 'final, not draft',
      args: { path: 'final.md', content: 'approved text' },
    });
    expect(decision).toMatchObject({ callId: 't1.0', decision: 'approve', by: 'alice' });
    const r = await h.agents.waitForTask(agentId, taskId);
    expect(r).toMatchObject({ outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT' });
    expect(r.toolCalls[0]).toMatchObject({
      name: 'fs.write',
      status: 'ok',
      args: { path: 'final.md', content: 'approved text' },
      approval: { decision: 'approved', by: 'alice', note: 'final, not draft', modelArgs: { path: 'draft.md' } },
    });
    const tools = await toolActivities(workflowId);
    expect(tools.map((t) => (t.input as { args: unknown }).args)).toEqual([
      { path: 'final.md', content: 'approved text' },
    ]);
    // Who decided is in the agent's history: the update's own input.
    const accepted = (await historyOf(h.agents.client, agentWorkflowId(agentId))).find(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'decideApproval',
    );
    expect(
      firstPayload(accepted?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args),
    ).toMatchObject({ callId: 't1.0', decision: 'approve', by: 'alice' });
    expect((await h.agents.status(agentId)).approvals).toBeUndefined();
  });

  it('denied, is E_DENIED pain: the next LLM request carries the human’s reason, and the same call denied again locks the agent', async () => {
    const agentId = uniqueId('deny');
    const turns = [WRITE('a.md'), WRITE('a.md'), WRITE('a.md'), DONE];
    const { taskId, workflowId } = await waitingCall(h, agentId, turns, {
      ...ASK,
      // The second identical failure alerts, the third locks.
      safety: { repeatThreshold: 2, frustrationThreshold: 10 },
    });
    for (const tick of [1, 2, 3]) {
      const callId = `t${tick}.0`;
      await eventually(`call ${callId} waiting`, async () =>
        (await h.agents.approvals(agentId)).approvals.find((p) => p.callId === callId),
      );
      await h.agents.decide(agentId, { callId, decision: 'deny', by: 'bob', reason: `not a.md, attempt ${tick}` });
    }
    const r = await h.agents.waitForTask(agentId, taskId);
    expect(r).toMatchObject({
      outcome: 'SUSPENDED',
      agentState: 'SAFETY_LOCKOUT',
      reason: { code: 'REPEATED_FAILURE' },
    });
    expect(r.toolCalls.map((c) => [c.status, c.error?.code, c.approval?.decision])).toEqual([
      ['failed', 'E_DENIED', 'denied'],
      ['failed', 'E_DENIED', 'denied'],
      ['failed', 'E_DENIED', 'denied'],
    ]);
    const requests = await llmRequests(await settledHistory(h.agents.client, workflowId));
    const second = JSON.stringify(requests[1]?.messages);
    expect(second).toContain('bob denied this fs.write call: not a.md, attempt 1');
    expect(await toolActivities(workflowId)).toEqual([]);
  });

  it('expires after timeoutMs as a denial the model reads, "no decision within"', async () => {
    const agentId = uniqueId('expire');
    const { taskId, workflowId } = await h.agents.submit(agentId, {
      goal: 'write',
      config: configFor([WRITE('a.md'), DONE], { tools: { approval: { ask: ['fs.write'], timeoutMs: 1000 } } }),
    });
    const r = await h.agents.waitForTask(agentId, taskId);
    expect(r).toMatchObject({ outcome: 'COMPLETED' });
    expect(r.toolCalls[0]).toMatchObject({
      status: 'failed',
      error: { code: 'E_DENIED', message: 'no decision within 1 s: this fs.write call was not run' },
      approval: { decision: 'expired' },
    });
    const requests = await llmRequests(await settledHistory(h.agents.client, workflowId));
    expect(JSON.stringify(requests[1]?.messages)).toContain('no decision within 1 s');
    expect((await h.agents.status(agentId)).agentState).toBe('WAITING_FOR_EVENT');
  });

  it('ends at once on a halt: the task CANCELED, its waiting calls recorded as never run, nothing left to decide', async () => {
    const agentId = uniqueId('halt');
    const { taskId, workflowId } = await waitingCall(h, agentId, [WRITE('a.md'), DONE]);
    await h.agents.halt(agentId, { by: 'carol' });
    const r = await h.agents.waitForTask(agentId, taskId);
    expect(r).toMatchObject({ outcome: 'CANCELLED', agentState: 'STOPPED' });
    expect(r.toolCalls[0]).toMatchObject({ status: 'skipped', error: { code: 'E_SKIPPED' } });
    expect(await toolActivities(workflowId)).toEqual([]);
    const s = await h.agents.status(agentId);
    expect(s).toMatchObject({ agentState: 'STOPPED' });
    expect(s.approvals).toBeUndefined();
    await expect(h.agents.decide(agentId, { callId: 't1.0', decision: 'approve' })).rejects.toThrow(NotFoundError);
  });

  it('refuses an unknown call (NotFound), args that do not fit the tool (InvalidArgument), and the second of two racing approvers (Refused)', async () => {
    const agentId = uniqueId('race');
    const { taskId } = await waitingCall(h, agentId, [WRITE('a.md'), DONE]);
    await expect(h.agents.decide(agentId, { callId: 't7.0', decision: 'approve' })).rejects.toMatchObject({
      type: 'NotFound',
      message: `decision refused: no call t7.0 of agent ${agentId} waits for approval (waiting: t1.0); \`starry approvals ${agentId}\` lists them`,
    });
    await expect(h.agents.decide(agentId, { callId: 't1.0', decision: 'approve', args: { path: 42 } })).rejects.toThrow(
      InvalidArgumentError,
    );
    const both = await Promise.allSettled([
      h.agents.decide(agentId, { callId: 't1.0', decision: 'approve', by: 'dan' }),
      h.agents.decide(agentId, { callId: 't1.0', decision: 'deny', by: 'erin', reason: 'no' }),
    ]);
    expect(both.filter((x) => x.status === 'fulfilled')).toHaveLength(1);
    const lost = both.find((x) => x.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toBeInstanceOf(RefusedError);
    expect(String(lost.reason.message)).toMatch(/was decided already: (approved by dan|denied by erin)/);
    expect((await h.agents.waitForTask(agentId, taskId)).outcome).toBe('COMPLETED');
  });
});

/** An agent whose first task (done at once) gave it the rule `ask: fs.write`. */
async function agentWithRules(agentId: string): Promise<void> {
  await h.agents.waitForTask(
    agentId,
    (await h.agents.submit(agentId, { goal: 'first', config: configFor([DONE]) })).taskId,
  );
}

describe('the agent’s approval rules', () => {
  it('hold for a later task whose config says nothing of them: a task can add rules, never remove its agent’s', async () => {
    const agentId = uniqueId('rules-kept');
    await agentWithRules(agentId);
    const { taskId } = await h.agents.submit(agentId, {
      goal: 'second',
      config: scriptedConfig(writeScript([WRITE('a.md'), DONE]), makeWorkspace(), {}),
    });
    await eventually('the second task’s call waiting', async () => (await h.agents.approvals(agentId)).approvals[0]);
    await h.agents.decide(agentId, { callId: 't1.0', decision: 'approve' });
    expect((await h.agents.waitForTask(agentId, taskId)).toolCalls[0]).toMatchObject({
      status: 'ok',
      approval: { decision: 'approved' },
    });
  });
});

describe('an admin and the approval rules', () => {
  it('takes a rule away with admin:limits (the one way to), recorded with who; the next task’s call runs unasked', async () => {
    const agentId = uniqueId('rules-admin');
    await agentWithRules(agentId);
    const r = await h.agents.setLimits(agentId, { approval: { ask: [], deny: [] }, by: 'root', note: 'trusted now' });
    expect(r).toMatchObject({ changed: ['approval'] });
    expect((await h.agents.status(agentId)).limitChanges.at(-1)).toMatchObject({
      by: 'root',
      note: 'trusted now',
      approval: { from: { ask: ['fs.write'] } },
    });
    const { taskId } = await h.agents.submit(agentId, {
      goal: 'second',
      config: scriptedConfig(writeScript([WRITE('a.md'), DONE]), makeWorkspace(), {}),
    });
    const result = await h.agents.waitForTask(agentId, taskId);
    expect(result.toolCalls[0]).toMatchObject({ name: 'fs.write', status: 'ok' });
    expect(result.toolCalls[0]?.approval).toBeUndefined();
  });
});

describe('approval and the worker', () => {
  it('waits across a worker restart: no activity ran, and the call runs once approved on the new worker', async () => {
    const queue = uniqueId('tq-approval-restart');
    const first = await startHarness({ name: 'approval-restart', taskQueue: queue });
    const agentId = uniqueId('restart');
    let second: Harness | undefined;
    try {
      const { taskId, workflowId } = await waitingCall(first, agentId, [WRITE('a.md'), DONE]);
      await first.stop();
      second = await startHarness({ name: 'approval-restart', taskQueue: queue });
      await second.agents.decide(agentId, { callId: 't1.0', decision: 'approve', by: 'frank' });
      const r = await second.agents.waitForTask(agentId, taskId);
      expect(r).toMatchObject({ outcome: 'COMPLETED' });
      expect(r.toolCalls[0]).toMatchObject({ status: 'ok', approval: { decision: 'approved', by: 'frank' } });
      const tools = activitiesIn(await historyOf(second.agents.client, workflowId)).filter(
        (a) => a.activityType === 'tool',
      );
      expect(tools).toHaveLength(1);
    } finally {
      await second?.stop();
    }
  });

  it("asks for what the worker's policy names, whatever the task's config says, and denies what it forbids", async () => {
    const roots = [os.tmpdir()];
    const w = await startHarness({
      name: 'approval-policy',
      activities: {
        policy: parseWorkerPolicy({ roots, allowRoot: true, approval: { ask: ['fs.write'], deny: ['fs.list'] } }),
      },
    });
    try {
      const agentId = uniqueId('policy');
      const turns = [{ toolCalls: [{ name: 'fs.list', args: {} }] }, WRITE('a.md'), DONE];
      const { taskId, call } = await waitingCall(w, agentId, turns, {});
      expect(call).toMatchObject({ callId: 't2.0', tool: 'fs.write', rule: 'fs.write', from: 'worker' });
      await w.agents.decide(agentId, { callId: 't2.0', decision: 'approve' });
      const r = await w.agents.waitForTask(agentId, taskId);
      expect(r.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([
        ['fs.list', 'failed', 'E_DENIED'],
        ['fs.write', 'ok', undefined],
      ]);
      expect(r.toolCalls[0]?.error?.message).toMatch(/denied by the worker's policy \(rule fs\.list\)/);
    } finally {
      await w.stop();
    }
  });
});
