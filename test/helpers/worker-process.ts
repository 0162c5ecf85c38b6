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
import { toolWorkerEnv } from '../../dev/tool-worker';
import { address } from './harness';

/** More for a worker process: variables over this process's environment, and a place for what it prints. */
export interface WorkerProcessOptions {
  env?: Record<string, string>;
  /** Receives its stdout and stderr, chunk by chunk. */
  output?: string[];
  /** JavaScript to run instead of lib/workers/main.js; it prints "worker ready" once its worker runs. */
  script?: string;
  /**
   * A tool worker (`--tools`) whose tool task queue is `taskQueue` (the workflows' queue: `env.STARRY_TASK_QUEUE`),
   * started without the LLM keys of this process's environment.
   */
  tools?: boolean;
  /** The package folder to run `lib/workers/main.js` from, as its working directory too (default: the project). */
  pkg?: string;
}

/**
 * Start a worker process on `taskQueue` (of the run's server, or the one at `serverAddress`); resolves
 * once it polls. Kill what it returns (SIGKILL is fine).
 */
export async function startWorkerProcess(
  taskQueue: string,
  serverAddress = address(),
  opts: WorkerProcessOptions = {},
): Promise<ChildProcess> {
  const child = await readyWorker(taskQueue, serverAddress, opts);
  // "worker ready" comes before its first poll: a command that looks for a poller right after would miss it.
  await pollerOn(taskQueue, serverAddress, opts.tools ? 'activity' : 'workflow');
  return child;
}

/** Wait until a worker polls `taskQueue` for workflow tasks (or, a tool worker, activities only). */
export async function pollerOn(
  taskQueue: string,
  serverAddress = address(),
  kind: 'workflow' | 'activity' = 'workflow',
): Promise<void> {
  const connection = await Connection.connect({ address: serverAddress });
  try {
    await eventually(`a poller on ${taskQueue}`, async () => {
      const { pollers } = await connection.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: taskQueue, kind: 1 },
        taskQueueType: kind === 'activity' ? 2 : 1,
      });
      return pollers?.length ? true : undefined;
    });
  } finally {
    await connection.close();
  }
}

function readyWorker(taskQueue: string, serverAddress: string, opts: WorkerProcessOptions): Promise<ChildProcess> {
  const pkg = opts.pkg ?? projectRoot();
  const main = path.join(pkg, 'lib', 'workers', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` (npm test does it)`);
  const queues = opts.tools
    ? { STARRY_TASK_QUEUE: `${taskQueue}-workflows`, STARRY_TOOL_TASK_QUEUE: taskQueue }
    : { STARRY_TASK_QUEUE: taskQueue };
  const env = { ...process.env, TEMPORAL_ADDRESS: serverAddress, ...queues, ...opts.env };
  const child = spawn(process.execPath, opts.script ? ['-e', opts.script] : opts.tools ? [main, '--tools'] : [main], {
    cwd: pkg,
    env: opts.tools ? toolWorkerEnv(env) : env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const read = (d: Buffer) => {
      out += String(d);
      opts.output?.push(String(d));
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
