/**
 * A worker process: `node lib/workers/main.js`. Connects from the environment (workers/connection.ts)
 * and runs until SIGINT/SIGTERM.
 */
import { connectWorker, temporalEnv } from './connection';
import { createWorker } from './worker';

async function main(): Promise<void> {
  const env = temporalEnv();
  const connection = await connectWorker(env);
  const worker = await createWorker({ connection, namespace: env.namespace, workflowBundlePath: process.env.STARRY_WORKFLOW_BUNDLE, shutdownGraceTime: '45 seconds' });
  process.stdout.write(`worker ready on ${env.address} (task queue ${worker.options.taskQueue})\n`);
  await worker.run();
  await connection.close();
}

main().catch((err) => {
  process.stderr.write(`worker failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
