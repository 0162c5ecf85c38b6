/**
 * Chaos: the worker process is SIGKILLed again and again while agents append to files and run shell
 * commands. Temporal runs a lost call again (at-least-once); the runtime makes that invisible to the
 * agent: no append applied twice, no pain counted for a dead worker (retry.maximumAttempts is 1 here,
 * so a loss that counted would show as a failed call), and no shell process outliving its worker. Nor
 * an MCP server: it dies with its worker, and the successor removes its sandbox's cgroups.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { cgroupHost } from '../../activities/tools/limits';
import { until } from '../../dev/poll';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { historyOf } from '../helpers/workflow-history';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

const AGENTS = 3;
const TURNS = 8;
const KILLS = 5;
/** How long each shell command sleeps: a marker no other process on the machine uses. */
const SLEEP = '2.71';

let h: Harness;
let worker: ChildProcess | undefined;
beforeAll(async () => {
  h = await startHarness({ name: 'chaos', withWorker: false });
});
afterAll(async () => {
  if (worker) await killWorker(worker);
  await h?.stop();
});

function pgrep(pattern: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

/** Sandboxes (bwrap processes) running a shell call of this test; of one worker's, given its `pid.` */
const shellProcesses = (owner = '') => pgrep(`STARRY_SANDBOX_OWNER ${owner}.* sleep ${SLEEP}`);

describe('a worker SIGKILLed during side-effecting tasks', () => {
  it('repeats no side effect, counts no pain and leaves no process behind', async () => {
    const turns = Array.from({ length: TURNS }, (_, i) => ({
      toolCalls: [
        { name: 'fs.write', args: { path: 'log.txt', content: `${i + 1}\n`, append: true } },
        { name: 'shell.run', args: { command: 'sleep', args: [SLEEP] } },
      ],
    }));
    const script = writeScript([...turns, { text: 'all lines written' }]);
    const agents = Array.from({ length: AGENTS }, () => ({ agentId: uniqueId('chaos'), workspace: makeWorkspace() }));
    const retry = { initialIntervalMs: 100, backoffCoefficient: 2, maximumIntervalMs: 1000, maximumAttempts: 1 };

    worker = await startWorkerProcess(h.taskQueue);
    const tasks = await Promise.all(
      agents.map(async (a) => ({
        ...a,
        ...(await h.agents.submit(a.agentId, {
          goal: 'write the lines',
          config: scriptedConfig(script, a.workspace, { retry }),
        })),
      })),
    );

    let orphans = 0;
    for (let kill = 0; kill < KILLS; kill++) {
      // Kill while shell commands run: they must not live on beside the call's re-run.
      await until('a shell command to run', () => shellProcesses().length > 0, 60_000);
      const dead = worker.pid;
      await killWorker(worker);
      worker = undefined;
      worker = await startWorkerProcess(h.taskQueue);
      // Most die with the worker at once; one killed while still starting is reaped by its successor.
      await until("the dead worker's sandboxes to end", () => shellProcesses(`${dead}.`).length === 0, 2_000).catch(
        () => {
          orphans += shellProcesses(`${dead}.`).length;
        },
      );
    }

    const results = await Promise.all(
      tasks.map((t) => h.agents.waitForTask(t.agentId, t.taskId, { timeoutMs: 240_000 })),
    );
    expect(orphans).toBe(0);
    const expected = Array.from({ length: TURNS }, (_, i) => `${i + 1}\n`).join('');
    let lostCalls = 0;
    for (const [i, t] of tasks.entries()) {
      // Every call succeeded exactly once as the agent saw it: no ETIMEDOUT pain from a dead worker.
      expect(results[i]).toMatchObject({ outcome: 'COMPLETED', finalText: 'all lines written' });
      expect(results[i]?.toolCalls.map((c) => c.status)).toEqual(Array(2 * TURNS).fill('ok'));
      expect((await h.agents.status(t.agentId)).counters.consecutiveFailures).toBe(0);
      // And every append was applied once.
      expect(readFileSync(path.join(t.workspace, 'log.txt'), 'utf8')).toBe(expected);
      const events = await historyOf(h.agents.client, t.workflowId);
      lostCalls += events.filter((e) => e.kind === 'activityTaskTimedOut').length;
    }
    // The kills did hit calls in flight (each kill loses at least one call; with 1 attempt each loss times out).
    expect(lostCalls).toBeGreaterThanOrEqual(KILLS);
    expect(shellProcesses()).toEqual([]);
    expect(pgrep(`^sleep ${SLEEP}`)).toEqual([]);
  }, 300_000);
});

describe('a worker SIGKILLed while its MCP server works', () => {
  const SERVER = path.resolve(__dirname, '../fixtures/mcp/server.js');
  const TAG = `chaos-${process.pid}`;
  const serverProcesses = () => pgrep(`[-]-tag ${TAG}`);
  /** Cgroups of sandboxes of the worker with this pid (where the host lets workers make them). */
  const cgroupsOf = async (pid: number | undefined) => {
    const host = await cgroupHost();
    return [host?.pids, host?.memory].flatMap((dir) =>
      dir ? readdirSync(dir).filter((name) => name.startsWith(`starry-${pid}.`)) : [],
    );
  };

  it('takes the server with it, and its successor removes the server’s cgroups', async () => {
    const policy = {
      roots: [path.dirname(makeWorkspace())],
      mcpCommands: [
        { command: 'node', readOnly: [path.dirname(SERVER), path.resolve(__dirname, '../../node_modules')] },
      ],
    };
    const saved = process.env.STARRY_WORKER_POLICY;
    process.env.STARRY_WORKER_POLICY = JSON.stringify(policy);
    try {
      // The task queue's only worker: one left by the test before has another policy.
      if (worker) await killWorker(worker);
      worker = await startWorkerProcess(h.taskQueue);
      const script = writeScript([{ toolCalls: [{ name: 'files.slow', args: { ms: 60_000 } }] }, { text: 'done' }]);
      const config = scriptedConfig(script, makeWorkspace(), {
        tools: { mcp: { files: { command: 'node', args: [SERVER, '--tag', TAG] } } },
      });
      await h.agents.submit(uniqueId('chaos-mcp'), { goal: 'wait on the server', config });
      await until('the MCP server to run', () => serverProcesses().length > 0, 60_000);
      const dead = worker.pid;
      if ((await cgroupHost()) !== undefined) expect((await cgroupsOf(dead)).length).toBeGreaterThan(0);
      await killWorker(worker);
      worker = undefined;
      await until('the dead worker’s MCP server to end', () => serverProcesses().length === 0, 2_000);
      worker = await startWorkerProcess(h.taskQueue);
      await until('the dead worker’s cgroups to be removed', async () => (await cgroupsOf(dead)).length === 0, 5_000);
    } finally {
      process.env.STARRY_WORKER_POLICY = saved;
      if (saved === undefined) delete process.env.STARRY_WORKER_POLICY;
    }
  }, 120_000);
});
