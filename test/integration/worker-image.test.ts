/**
 * What the Dockerfile runs, without Docker: `node bin/starry.js worker` from a production-only install
 * (package.json, the lockfile, bin/ and lib/, `npm ci --omit=dev`) in a temp dir, against the test's
 * dev server. ECS stops a task with SIGTERM: the worker lets the activity in flight finish (it is not
 * retried) and exits 0; another worker then finishes the task.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import path from 'node:path';
import { localDirStore } from '../../activities/store';
import { AgentClient } from '../../client/agent-client';
import { projectRoot } from '../../dev/paths';
import {
  address,
  makeWorkspace,
  privateDir,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
} from '../helpers/harness';
import { activityRunning, completedAttempts, hasCompleted, settledHistory } from '../helpers/workflow-history';
import { pollerOn } from '../helpers/worker-process';
import { Connection } from '@temporalio/client';

jest.setTimeout(300_000);

let dir: string;
beforeAll(() => {
  // Outside the run's workspace roots: a worker refuses roots that hold its own code.
  dir = privateDir('starry-image');
  for (const f of ['package.json', 'package-lock.json', 'bin', 'lib'])
    cpSync(path.join(projectRoot(), f), path.join(dir, f), { recursive: true });
  const install = spawnSync(
    'npm',
    ['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
    { cwd: dir, encoding: 'utf8' },
  );
  if (install.status !== 0) throw new Error(`npm ci --omit=dev failed: ${install.stderr}`);
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the worker image’s command', () => {
  it('has no dev dependency in its install', () => {
    const ls = spawnSync('npm', ['ls', '--omit=dev', '--depth=0', '--json'], { cwd: dir, encoding: 'utf8' });
    const deps = Object.keys((JSON.parse(ls.stdout) as { dependencies?: Record<string, unknown> }).dependencies ?? {});
    expect(deps).toContain('@temporalio/worker');
    expect(deps).not.toContain('jest');
    expect(deps).not.toContain('aws-cdk-lib');
  });

  it('lets the activity in flight finish on SIGTERM, exits 0, and the task completes on another worker', async () => {
    const taskQueue = uniqueId('image');
    // The workers of a task queue share one transcript store (on AWS, the bucket).
    const storeDir = privateDir('starry-image-store');
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: address(),
      STARRY_TASK_QUEUE: taskQueue,
      STARRY_STORE_DIR: storeDir,
    };
    const worker = spawn(process.execPath, ['bin/starry.js', 'worker'], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    worker.stderr.on('data', (d) => (stderr += String(d)));
    const exited = new Promise<number | null>((r) => worker.on('exit', (code) => r(code)));
    const connection = await Connection.connect({ address: address() });
    const agents = new AgentClient({ connection, taskQueue });
    try {
      // The image's worker starts as it would in a container: the submit waits only a few seconds for it.
      await pollerOn(taskQueue);
      const agentId = uniqueId('sigterm');
      const config = scriptedConfig(
        writeScript([{ delayMs: 3000, toolCalls: [{ name: 'fs.list', args: {} }] }, { text: 'Done.' }]),
        makeWorkspace(),
      );
      const { taskId, workflowId } = await agents.submit(agentId, { goal: 'slow first call', config });
      await activityRunning(agents.client, workflowId, 'llm');
      worker.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stderr).toMatch(/stopping the worker/);

      const second = await startHarness({
        name: 'image-second',
        taskQueue,
        activities: { store: localDirStore(storeDir) },
      });
      try {
        const result = await agents.waitForTask(agentId, taskId);
        expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'Done.' });
        // The first LLM call finished on the stopping worker: one attempt, not retried.
        const history = await settledHistory(agents.client, workflowId, hasCompleted('llm'));
        expect(completedAttempts(history, 'llm')[0]).toBe(1);
      } finally {
        await second.stop();
      }
    } finally {
      worker.kill('SIGKILL');
      await connection.close();
    }
  });
});
