/**
 * Workers that share a task queue but not a transcript store (issue 53): each names its store in its
 * Temporal identity, a worker joining a queue whose workers name another store says so at start, and a
 * task that reaches a worker without its blobs fails naming both stores and what to do, never the
 * model or the credentials. Two worker processes (lib/workers/main.js) with two STARRY_STORE_DIRs.
 */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { until } from '../../dev/poll';
import {
  makeWorkspace,
  privateDir,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

jest.setTimeout(150_000);

let h: Harness;
const children: ChildProcess[] = [];

beforeAll(async () => {
  h = await startHarness({ name: 'store-mix', withWorker: false });
});
afterAll(async () => {
  for (const c of children) await killWorker(c).catch(() => undefined);
  await h?.stop();
});

async function worker(storeDir: string, output: string[]): Promise<ChildProcess> {
  const child = await startWorkerProcess(h.taskQueue, undefined, { env: { STARRY_STORE_DIR: storeDir }, output });
  children.push(child);
  return child;
}

describe('two workers on one task queue with two stores', () => {
  it('warns the second at start, and fails the task at the first blob it cannot read, naming both stores', async () => {
    const storeA = path.join(privateDir('starry-store-a'), 'blobs');
    const storeB = path.join(privateDir('starry-store-b'), 'blobs');
    const workspace = makeWorkspace({ 'notes.md': 'hello' });
    const script = writeScript([
      { toolCalls: [{ name: 'fs.read', args: { path: 'notes.md' } }] },
      { delayMs: 4000, text: 'never answered on the first worker' },
    ]);
    const agentId = uniqueId('mixed');
    const outA: string[] = [];
    const first = await worker(storeA, outA);
    const { taskId, workflowId } = await h.agents.submit(agentId, {
      goal: 'read the notes',
      config: scriptedConfig(script, workspace),
    });

    // The first turn's transcript is in store A; the second LLM call runs there when A dies.
    const task = h.agents.client.workflow.getHandle(workflowId);
    await until('the second LLM turn to start', async () => {
      const d = await task.describe().catch(() => undefined);
      return (
        !!d?.raw.pendingActivities?.some(
          (a) => a.activityType?.name === 'llm' && Number(a.state) === 2 && (a.attempt ?? 1) === 1,
        ) && (await task.fetchHistory()).events!.some((e) => e.activityTaskCompletedEventAttributes)
      );
    });
    const outB: string[] = [];
    // B joins while A still polls: it says at start that the queue's workers use another store.
    await worker(storeB, outB);
    await until('the start warning', () => outB.join('').includes('use another transcript store'));
    expect(outB.join('')).toContain(`directory ${storeA}`);
    await killWorker(first);

    const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 120_000 });
    expect(result.outcome).toBe('FAILED');
    const error = JSON.stringify(result.error);
    expect(result.error).toMatchObject({ code: 'E_BLOB_MISSING' });
    expect(error).toContain(`this worker's store (directory ${storeB})`);
    expect(error).toContain(`(directory ${storeA})`);
    expect(error).toContain('One task queue needs one store');
    expect(error).not.toMatch(/check (the|your) credentials/);
    expect(await h.agents.status(agentId)).toMatchObject({ agentState: 'ERROR_PAUSED' });
  });
});
