/**
 * The pieces `starry` embeds: a worker in this process, and the local dev server. Worker logs go to
 * stderr at WARN, so `--json` output on stdout stays one clean object.
 */
import os from 'node:os';
import type { Worker } from '@temporalio/worker';
import type { Connection } from '@temporalio/client';
import { connectWorker, TASK_QUEUE, type TemporalEnv } from '../worker/connection';
import { isAlive } from './dev-server';
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

/**
 * True when some worker polled the task queue recently (long polls last up to ~60 s) and, when it ran on
 * this host, its process is still alive: the server keeps listing a worker for a minute after it exits,
 * and an identity is `pid@host` by default, so a dead local worker is recognised at once.
 */
export async function hasLiveWorker(connection: Connection, env: TemporalEnv, taskQueue = TASK_QUEUE): Promise<boolean> {
  const res = await connection.workflowService.describeTaskQueue({
    namespace: env.namespace,
    taskQueue: { name: taskQueue, kind: 1 },
    taskQueueType: 1,
  });
  const now = Date.now();
  return (res.pollers ?? []).some((p) => {
    const seconds = Number(p.lastAccessTime?.seconds ?? 0);
    if (now - seconds * 1000 >= 70_000) return false;
    const [pid, host] = (p.identity ?? '').split('@');
    if (host === os.hostname() && /^\d+$/.test(pid ?? '')) return isAlive(Number(pid));
    return true;
  });
}
