/**
 * Durability: the worker process dies (SIGKILL) while a task is inside a slow LLM turn; a new worker
 * process picks the task up and finishes it with the same result, and no completed tool call runs twice.
 * The worker processes are the compiled `lib/workers/main.js` (npm test builds it first). And the dev
 * server's SQLite file keeps agents across a server restart.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, startDevServer, type DevServer } from '../../dev/dev-server';
import { until } from '../../dev/poll';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { startWorkerProcess as startWorker } from '../helpers/worker-process';

let h: Harness;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // Client only: the workers are separate processes.
  h = await startHarness({ name: 'durable', withWorker: false });
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await h?.stop();
});

async function startWorkerProcess(taskQueue: string): Promise<ChildProcess> {
  const child = await startWorker(taskQueue);
  children.push(child);
  return child;
}

describe('a worker killed mid-task', () => {
  it('finishes the task on a new worker with the same result and no tool call executed twice', async () => {
    const workspace = makeWorkspace();
    const log = path.join(workspace, 'log.txt');
    const script = writeScript([
      { toolCalls: [{ name: 'fs.write', args: { path: 'log.txt', content: 'one\n', append: true } }] },
      { delayMs: 4000, toolCalls: [{ name: 'fs.write', args: { path: 'log.txt', content: 'two\n', append: true } }] },
      { toolCalls: [{ name: 'fs.read', args: { path: 'log.txt' } }] },
      { text: 'done: two lines written' },
    ]);
    const agentId = uniqueId('durable');
    const first = await startWorkerProcess(h.taskQueue);
    const { taskId, workflowId } = await h.agents.submit(agentId, {
      goal: 'write two lines',
      config: scriptedConfig(script, workspace),
    });

    // Kill it while the second (slow) LLM call is running: the first write is done, the second is not.
    const task = h.agents.client.workflow.getHandle(workflowId);
    await until('the slow LLM turn to start', async () => {
      if (!existsSync(log)) return false;
      const d = await task.describe().catch(() => undefined);
      return !!d?.raw.pendingActivities?.some(
        (a) => a.activityType?.name === 'llm' && Number(a.state) === 2 /* STARTED */,
      );
    });
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    expect(readFileSync(log, 'utf8')).toBe('one\n');

    await startWorkerProcess(h.taskQueue);
    const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 90_000 });

    expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: 4, finalText: 'done: two lines written' });
    expect(result.toolCalls.map((c) => [c.name, c.status])).toEqual([
      ['fs.write', 'ok'],
      ['fs.write', 'ok'],
      ['fs.read', 'ok'],
    ]);
    expect(readFileSync(log, 'utf8')).toBe('one\ntwo\n');
    // The slow LLM call was retried on the new worker (attempt 2), after the first worker's heartbeats stopped.
    const history = await task.fetchHistory();
    const attempts = (history.events ?? [])
      .filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => e.activityTaskStartedEventAttributes?.attempt);
    expect(attempts).toContain(2);
  }, 120_000);
});

describe('a dev server restart', () => {
  it('keeps the agent, its results and its counters in the SQLite file, and the agent takes the next task', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'starry-restart-'));
    const [port, uiPort] = [await freePort(), await freePort()];
    const start = () =>
      startDevServer({ port, uiPort, dbFile: path.join(dir, 'dev.db'), logFile: path.join(dir, 'server.log') });
    const agentId = uniqueId('restart');
    // One failed tool call, then an answer: the agent carries consecutiveFailures 1 into its next task.
    const config = scriptedConfig(
      writeScript([{ toolCalls: [{ name: 'fs.read', args: { path: 'missing.txt' } }] }, { text: 'done' }]),
      makeWorkspace(),
    );

    let server: DevServer | undefined = await start();
    let harness: Harness | undefined = await startHarness({ name: 'restart', address: server.address });
    const taskQueue = harness.taskQueue;
    try {
      const first = await harness.agents.submit(agentId, { goal: 'before the restart', config });
      expect(await harness.agents.waitForTask(agentId, first.taskId)).toMatchObject({ outcome: 'COMPLETED' });
      const before = await harness.agents.status(agentId);
      expect(before.counters.consecutiveFailures).toBe(1);
      await harness.stop();
      harness = undefined;
      await server.stop();

      server = await start();
      expect(server.started).toBe(true);
      harness = await startHarness({ name: 'restart', address: server.address, taskQueue });
      const after = await harness.agents.status(agentId);
      expect(after).toMatchObject({
        agentState: 'WAITING_FOR_EVENT',
        tokensUsed: before.tokensUsed,
        counters: before.counters,
      });
      expect(after.tasks).toEqual(before.tasks);

      const second = await harness.agents.submit(agentId, { goal: 'after the restart', config });
      expect(second.taskId).toBe('task-2');
      const result = await harness.agents.waitForTask(agentId, second.taskId);
      expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'done' });
      expect((await harness.agents.status(agentId)).tasks.map((t) => t.taskId)).toEqual([first.taskId, second.taskId]);
    } finally {
      await harness?.stop();
      await server?.stop();
    }
  }, 120_000);
});
