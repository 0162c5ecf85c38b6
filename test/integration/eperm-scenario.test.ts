/**
 * The seeds' concrete scenario through real workflows on a real server: fs.read /root/secret.txt →
 * EPERM → pain → the agent lists its permitted paths → reads a permitted file → completes.
 */
import path from 'node:path';
import { projectRoot } from '../../workers/paths';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, type Harness } from '../helpers/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'eperm' });
});
afterAll(async () => h?.stop());

describe('the EPERM pain scenario', () => {
  it('feeds EPERM back as pain, then completes through the permitted path', async () => {
    const workspace = makeWorkspace({ 'notes.md': '# Notes\nagents work only inside ./workspace.\n' });
    const config = scriptedConfig(path.join(projectRoot(), 'examples/eperm/turns.json'), workspace);
    const agentId = uniqueId('eperm');
    const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'Tell me what /root/secret.txt says.', config });
    expect(taskId).toBe('task-1');
    expect(workflowId).toBe(`agent-${agentId}-task-1`);

    const result = await h.agents.waitForTask(agentId, taskId);
    expect(result).toMatchObject({ agentId, taskId, workflowId, outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ticks: 4, tokensUsed: 1910 });
    expect(result.reason).toBeUndefined();
    expect(result.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([
      ['fs.read', 'failed', 'EPERM'],
      ['fs.list', 'ok', undefined],
      ['fs.read', 'ok', undefined],
    ]);
    expect(result.toolCalls[0]).toMatchObject({ tick: 1, args: { path: '/root/secret.txt' }, error: { kind: 'execution', source: 'fs.read' } });
    expect(result.toolCalls[0]?.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(result.injections).toHaveLength(1);
    expect(result.injections[0]).toMatchObject({ tick: 1, kind: 'PAIN' });
    expect(result.injections[0]?.text).toContain('【System Pain Alert】');
    expect(result.injections[0]?.text).toContain('🔥🔥🔥 Critical Pain');
    expect(result.finalText).toMatch(/^Done\./);

    const status = await h.agents.status(agentId);
    expect(status).toMatchObject({ agentState: 'WAITING_FOR_EVENT', tokensUsed: 1910, tokenBudget: 100000, queue: [] });
    expect(status.counters.consecutiveFailures).toBe(0);
  });
});
