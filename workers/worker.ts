/**
 * The worker: the agent and task workflows plus every activity, on one task queue.
 */
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { TASK_QUEUE } from './connection';

export interface CreateWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  /** A prebuilt bundle (tests share one); otherwise the workflows are bundled at start. */
  workflowBundlePath?: string;
  activities?: ActivityDeps;
  identity?: string;
}

/**
 * Create a worker.
 *
 * ```ts
 * const worker = await createWorker({ connection: await connectWorker() });
 * await worker.run();
 * ```
 */
export async function createWorker(opts: CreateWorkerOptions): Promise<Worker> {
  const options: WorkerOptions = {
    connection: opts.connection,
    namespace: opts.namespace ?? 'default',
    taskQueue: opts.taskQueue ?? TASK_QUEUE,
    activities: createActivities({
      alerts: { webhookUrl: process.env.STARRY_ALERT_WEBHOOK, ...opts.activities?.alerts },
      ...opts.activities,
    }),
    // Heartbeats reach the server at least every 500 ms, so a cancellation (SYSTEM_HALT) lands fast.
    maxHeartbeatThrottleInterval: '500 milliseconds',
    defaultHeartbeatThrottleInterval: '500 milliseconds',
    ...(opts.identity ? { identity: opts.identity } : {}),
    ...(opts.workflowBundlePath
      ? { workflowBundle: { codePath: opts.workflowBundlePath } }
      : { workflowsPath: require.resolve('../workflows') }),
  };
  return Worker.create(options);
}
