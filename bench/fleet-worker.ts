/**
 * A worker process for bench/idle-fleet.ts: the production worker (`dev/embedded.ts`, as `starry worker`
 * and the other benchmarks start it) alone in its process, so its RSS is the worker's own. Started with
 * `fork()`; answers `status` with its memory and its sticky cache, and drains on `stop`.
 *
 * ```sh
 * node lib/bench/fleet-worker.js <address> <task queue> [maxCachedWorkflows]   # from fork(), with IPC
 * ```
 */
import { getHeapStatistics } from 'node:v8';
import { startEmbeddedWorker } from '../dev/embedded';

/** What the worker process answers to `status`. */
export interface FleetWorkerStatus {
  pid: number;
  identity: string;
  rss: number;
  heapUsed: number;
  numCachedWorkflows: number;
  maxCachedWorkflows: number;
  /** The V8 heap's limit, from which the SDK derives its default cache size. */
  heapLimit: number;
}

async function main(): Promise<void> {
  const [address, taskQueue, cache] = process.argv.slice(2);
  if (!address || !taskQueue || !process.send)
    throw new Error('usage: fork(lib/bench/fleet-worker.js, [address, taskQueue, maxCachedWorkflows?])');
  const embedded = await startEmbeddedWorker({ address, namespace: 'default' }, taskQueue, {
    activities: { alerts: { log: () => undefined } },
    ...(cache ? { maxCachedWorkflows: Number(cache) } : {}),
  });
  const { worker } = embedded;
  const status = (): FleetWorkerStatus => {
    const { rss, heapUsed } = process.memoryUsage();
    return {
      pid: process.pid,
      identity: worker.options.identity,
      rss,
      heapUsed,
      numCachedWorkflows: worker.getStatus().numCachedWorkflows,
      maxCachedWorkflows: worker.options.maxCachedWorkflows,
      heapLimit: getHeapStatistics().heap_size_limit,
    };
  };
  process.on('message', (m) => {
    if (m === 'status') process.send?.({ status: status() });
    else if (m === 'gc') {
      // With --expose-gc: RSS after a collection, so garbage does not read as growth.
      (globalThis as { gc?: () => void }).gc?.();
      process.send?.({ status: status() });
    } else if (m === 'stop')
      void embedded.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
  process.send({ status: status() });
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
