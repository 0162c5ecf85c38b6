/**
 * The pieces `starry` embeds: a worker in this process, and the local dev server. Worker logs go to
 * stderr at WARN, so `--json` output on stdout stays one clean object.
 */
import type { Worker } from '@temporalio/worker';
import { connectWorker, TASK_QUEUE, type TemporalEnv } from '../workers/connection';
import { installWorkerLogger } from '../workers/log';
import { createWorker, type CreateWorkerOptions } from '../workers/worker';

let runtimeInstalled = false;

/** Route the SDK's logs to stderr at `level` (once per process), without the expected outcomes (pain). */
export function quietRuntime(level: 'ERROR' | 'WARN' | 'INFO' = 'WARN'): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  installWorkerLogger(level, { quiet: true });
}

export interface EmbeddedWorker {
  worker: Worker;
  stop(): Promise<void>;
}

/** Options of `startEmbeddedWorker`: the worker factory's, and whether to route the SDK's logs here. */
export type EmbeddedWorkerOptions = Omit<CreateWorkerOptions, 'connection' | 'namespace' | 'taskQueue'> & {
  /** Install the quiet runtime logger (default true); false when the process installed its own (tests). */
  logs?: boolean;
};

/**
 * Start a worker in this process; `stop` drains it. The CLI's embedded worker, the test harness and the
 * benchmarks all start theirs here. It takes over its deployment (workers/versioning.ts): on a
 * developer's machine the build that runs now is the one that runs everything.
 */
export async function startEmbeddedWorker(
  env: TemporalEnv,
  taskQueue = TASK_QUEUE,
  opts: EmbeddedWorkerOptions = {},
): Promise<EmbeddedWorker> {
  const { logs = true, ...workerOptions } = opts;
  if (logs) quietRuntime();
  const connection = await connectWorker(env);
  const worker = await createWorker({
    connection,
    namespace: env.namespace,
    taskQueue,
    ...workerOptions,
    versioning: { makeCurrent: 'take-over', ...workerOptions.versioning },
  });
  const running = worker.run();
  return {
    worker,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
