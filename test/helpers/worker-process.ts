/**
 * Workers as separate processes (`node lib/worker/main.js`, built by `npm test`), for tests that kill
 * them: durability and chaos.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import { address } from './harness';

/**
 * Start a worker process on `taskQueue` (of the run's server, or the one at `serverAddress`); resolves
 * once it polls. Kill what it returns (SIGKILL is fine).
 */
export function startWorkerProcess(taskQueue: string, serverAddress = address()): Promise<ChildProcess> {
  const main = path.join(projectRoot(), 'lib', 'worker', 'main.js');
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
