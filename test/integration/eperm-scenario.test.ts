/**
 * The seeds' concrete scenario through real workflows on a real server: fs.read /root/secret.txt →
 * EPERM → pain → the agent lists its permitted paths → reads a permitted file → completes.
 */
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import { temporal } from '@temporalio/proto';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, type Harness } from '../helpers/harness';
import { activitiesIn, historyOf } from '../helpers/workflow-history';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'eperm' });
});
afterAll(async () => h?.stop());

describe('the EPERM pain scenario', () => {
  it('feeds EPERM back as pain, then completes through the permitted path', async () => {
    const workspace = makeWorkspace({ 'notes.md': '# Notes\nagents work only inside ./workspace.\n' });
    const config = scriptedConfig(path.join(projectRoot(), 'examples/eperm/turns.json'), workspace, { verify: true });
    const agentId = uniqueId('eperm');
    const { taskId, workflowId } = await h.agents.submit(agentId, {
      goal: 'Tell me what /root/secret.txt says.',
      config,
    });
    expect(taskId).toBe('task-1');
    expect(workflowId).toBe(`agent-${agentId}-task-1`);

    const result = await h.agents.waitForTask(agentId, taskId);
    // Four scripted ticks, then the verification step (on by default): the model stands by its answer.
    expect(result).toMatchObject({
      agentId,
      taskId,
      workflowId,
      outcome: 'COMPLETED',
      agentState: 'WAITING_FOR_EVENT',
      ticks: 5,
    });
    expect(result.tokensUsed).toBeGreaterThan(1910);
    expect(result.reason).toBeUndefined();
    expect(result.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([
      ['fs.read', 'failed', 'EPERM'],
      ['fs.list', 'ok', undefined],
      ['fs.read', 'ok', undefined],
    ]);
    expect(result.toolCalls[0]).toMatchObject({
      tick: 1,
      args: { path: '/root/secret.txt' },
      error: { kind: 'execution', source: 'fs.read' },
    });
    expect(result.toolCalls[0]?.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(result.injections.map((i) => [i.tick, i.kind])).toEqual([
      [1, 'PAIN'],
      [4, 'VERIFY'],
    ]);
    expect(result.injections[0]?.text).toContain('【System Pain Alert】');
    expect(result.injections[0]?.text).toContain('🔥🔥🔥 Critical Pain');
    expect(result.finalText).toMatch(/^Done\./);

    const status = await h.agents.status(agentId);
    expect(status).toMatchObject({
      agentState: 'WAITING_FOR_EVENT',
      tokensUsed: result.tokensUsed,
      tokenBudget: 100000,
      queue: [],
    });
    expect(status.counters.consecutiveFailures).toBe(0);

    // In the Web UI the refused read is a failed (red) activity carrying the normalized error, tried
    // once (execution errors are not retried); the calls that worked completed.
    const events = await historyOf(h.agents.client, workflowId);
    const tools = activitiesIn(events).filter((a) => a.activityType === 'tool');
    expect(tools.map((a) => [(a.input as { name: string }).name, a.events.at(-1)])).toEqual([
      ['fs.read', 'failed'],
      ['fs.list', 'completed'],
      ['fs.read', 'completed'],
    ]);
    const failed = events.find((e) => e.kind === 'activityTaskFailed')?.activityTaskFailedEventAttributes;
    expect(failed?.failure?.message).toBe(
      "EPERM: operation not permitted, access outside the workspace: '/root/secret.txt'",
    );
    expect(failed?.failure?.applicationFailureInfo).toMatchObject({ type: 'EPERM', nonRetryable: true });
    expect(failed?.retryState).toBe(temporal.api.enums.v1.RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE);
    expect(
      events.filter((e) => e.kind === 'activityTaskStarted').map((e) => e.activityTaskStartedEventAttributes?.attempt),
    ).not.toContain(2);
  });

  it('runs the same scenario without the verification step when the config turns it off', async () => {
    const config = scriptedConfig(
      path.join(projectRoot(), 'examples/eperm/turns.json'),
      makeWorkspace({ 'notes.md': '# Notes\n' }),
      { verify: false },
    );
    const agentId = uniqueId('eperm-noverify');
    const result = await h.agents.waitForTask(
      agentId,
      (await h.agents.submit(agentId, { goal: 'Tell me what /root/secret.txt says.', config })).taskId,
    );
    expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: 4, tokensUsed: 1910 });
    expect(result.injections.map((i) => i.kind)).toEqual(['PAIN']);
  });

  it('tells the guide about the failure it is explaining: the first one counts as 1 consecutive failure', async () => {
    const config = scriptedConfig(
      path.join(projectRoot(), 'examples/eperm/turns.json'),
      makeWorkspace({ 'notes.md': '# Notes\n' }),
      { guide: 'debugging' },
    );
    const agentId = uniqueId('eperm-debugging');
    const result = await h.agents.waitForTask(
      agentId,
      (await h.agents.submit(agentId, { goal: 'Tell me what /root/secret.txt says.', config })).taskId,
    );
    expect(result.injections[0]?.kind).toBe('PAIN');
    expect(result.injections[0]?.text).toContain('tick: 1, consecutive failures: 1');
  });
});
