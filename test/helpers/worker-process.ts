/**
 * Workers as separate processes (`node lib/workers/main.js`, built by `npm test`), for tests that kill
 * them: durability and chaos.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { projectRoot } from '../../dev/paths';
import { eventually } from '../../dev/poll';
import { address } from './harness';

/**
 * Start a worker process on `taskQueue` (of the run's server, or the one at `serverAddress`); resolves
 * once it polls. Kill what it returns (SIGKILL is fine).
 */
export async function startWorkerProcess(taskQueue: string, serverAddress = address()): Promise<ChildProcess> {
  const child = await readyWorker(taskQueue, serverAddress);
  // "worker ready" comes before its first poll: a command that looks for a poller right after would miss it.
  const connection = await Connection.connect({ address: serverAddress });
  try {
    await eventually(`a poller on ${taskQueue}`, async () => {
      const { pollers } = await connection.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: taskQueue, kind: 1 },
        taskQueueType: 1,
      });
      return pollers?.length ? true : undefined;
    });
  } finally {
    await connection.close();
  }
  return child;
}

function readyWorker(taskQueue: string, serverAddress: string): Promise<ChildProcess> {
  const main = path.join(projectRoot(), 'lib', 'workers', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` (npm test does it)`);
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, TEMPORAL_ADDRESS: serverAddress, STARRY_TASK_QUEUE: taskQueue },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const read = (d: Buffer) => {
      out += String(d);
      if (out.includes('worker ready')) resolve(child);
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.once('exit', (code) => reject(new Error(`worker exited early (${code}): ${out}`)));
  });
}

/** SIGKILL a worker process and wait until it is gone. */
export async function killWorker(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}
