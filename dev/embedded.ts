/**
 * The pieces `starry` embeds: a worker in this process, and the local dev server. Worker logs go to
 * stderr at WARN, so `--json` output on stdout stays one clean object.
 */
import type { Worker } from '@temporalio/worker';
import { connectWorker, TASK_QUEUE, type TemporalEnv } from '../worker/connection';
import { installWorkerLogger } from '../worker/log';
import { createWorker, type CreateWorkerOptions } from '../worker/worker';

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

/** Start a worker in this process; `stop` drains it. */
export async function startEmbeddedWorker(env: TemporalEnv, taskQueue = TASK_QUEUE, opts: Pick<CreateWorkerOptions, 'shutdownGraceTime'> = {}): Promise<EmbeddedWorker> {
  quietRuntime();
  const connection = await connectWorker(env);
  const worker = await createWorker({ connection, namespace: env.namespace, taskQueue, ...opts });
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

