/**
 * The pieces `starry` embeds: a worker in this process, and the local dev server. Worker logs go to
 * stderr at WARN, so `--json` output on stdout stays one clean object.
 */
import { connectWorker, TASK_QUEUE, type TemporalEnv } from '../workers/connection';
import { workerConfigFromEnv } from '../workers/env';
import { installWorkerLogger } from '../workers/log';
import { startMetrics, type WorkerMetrics } from '../workers/metrics';
import { createWorker, type CreateWorkerOptions, type VersionedWorker } from '../workers/worker';

let runtimeInstalled = false;

/**
 * Route the SDK's logs to stderr at `level` (once per process), without the expected outcomes (pain);
 * with `metrics` (workers/metrics.ts), Temporal's metrics and the tasks' counters go to them.
 */
export function quietRuntime(level: 'ERROR' | 'WARN' | 'INFO' = 'WARN', metrics?: WorkerMetrics): boolean {
  if (runtimeInstalled) return false;
  runtimeInstalled = true;
  return installWorkerLogger(level, { quiet: true, ...(metrics ? { metrics } : {}) });
}

export interface EmbeddedWorker {
  worker: VersionedWorker;
  /** Where its metrics go (the config's `OTEL_*` asked for them), e.g. `Prometheus at http://localhost:9464/metrics`. */
  metrics?: string;
  stop(): Promise<void>;
}

/** Options of `startEmbeddedWorker`: the worker factory's, and whether to route the SDK's logs here. */
export type EmbeddedWorkerOptions = Omit<CreateWorkerOptions, 'connection' | 'namespace' | 'taskQueue'> & {
  /** Install the quiet runtime logger (default true); false when the process installed its own (tests). */
  logs?: boolean;
};

/**
 * Start a worker in this process; `stop` drains it. The CLI's embedded worker, the test harness and the
 * benchmarks all start theirs here. It joins its deployment as any worker does (workers/versioning.ts:
 * its version becomes current only when the deployment has none) and changes no routing: only a caller
 * that owns the server — `starry dev`, `starry run` and the demo on this folder's own dev server, a test
 * run on the server it started — passes `versioning: { makeCurrent: 'take-over' }`, so that the build
 * that runs now is the one that runs everything there. Moving a fleet to a new build is a deploy act
 * (docs/ARCHITECTURE.md#versioning), never a side effect of a command. The first one that installs the
 * runtime (`logs`) starts the metrics its config asks for; `stop` ends them too.
 */
export async function startEmbeddedWorker(
  env: TemporalEnv,
  taskQueue = TASK_QUEUE,
  opts: EmbeddedWorkerOptions = {},
): Promise<EmbeddedWorker> {
  const { logs = true, ...workerOptions } = opts;
  const config = workerOptions.config ?? workerConfigFromEnv();
  let metrics: WorkerMetrics | undefined;
  if (logs && !runtimeInstalled) {
    const started = config.metrics ? await startMetrics(config.metrics) : undefined;
    if (quietRuntime('WARN', started)) metrics = started;
    else await started?.shutdown();
  }
  const connection = await connectWorker(env);
  const worker = await createWorker({
    connection,
    namespace: env.namespace,
    taskQueue,
    ...workerOptions,
    config,
    ...(metrics ? { metrics } : {}),
    versioning: { makeCurrent: 'if-none', ...workerOptions.versioning },
  });
  const running = worker.run();
  return {
    worker,
    ...(metrics ? { metrics: metrics.where } : {}),
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
      await metrics?.shutdown();
    },
  };
}
