/**
 * The one worker entry point: `starry worker` (`--tools`: a tool worker), and `node lib/workers/main.js`
 * (what tests kill; `--tools` likewise). Reads
 * its configuration once from the environment (workers/env.ts), runs until SIGTERM or SIGINT, then lets
 * activities in flight finish for up to 45 s (the Fargate task's stopTimeout is 60 s).
 */
import { sandboxReport } from '../activities/tools/confine';
import { connectWorker } from './connection';
import { runsToolCalls } from '../core/worker-policy';
import { checkWorkspaceRoots, toolWorkerConfigFromEnv, workerConfigFromEnv, type WorkerConfig } from './env';
import { installWorkerLogger } from './log';
import { startMetrics } from './metrics';
import { shownUrl } from './otel-env';
import { searchAttributesReady } from './search-attributes';
import { createToolWorker, createWorker } from './worker';

/**
 * Run a worker until the process is asked to stop; `tools`: a tool worker (the tool task queue, the tool
 * activities only, no LLM key in its environment).
 *
 * ```ts
 * await runWorker(undefined, { tools: true });
 * ```
 *
 * @throws ConfigError when the environment is invalid, or a root of a worker that runs tool calls is not a
 * writable directory (before anything connects).
 */
export async function runWorker(config?: WorkerConfig, { tools = false }: { tools?: boolean } = {}): Promise<void> {
  config ??= tools ? toolWorkerConfigFromEnv() : workerConfigFromEnv();
  // A worker that runs tool calls needs its roots (on AWS, the EFS mount); one whose tools run elsewhere uses none.
  if (runsToolCalls({ tools, toolTaskQueue: config.toolTaskQueue })) await checkWorkspaceRoots(config);
  // Metrics first: Prometheus' port is bound (or refused) before anything connects, and the runtime's one
  // install takes the pipeline's buffer.
  const started = config.metrics ? await startMetrics(config.metrics) : undefined;
  // One readable line per failure (what, why, which attempt, what next); an embedding process may have installed its
  // own, and then its metrics stay.
  const metrics = installWorkerLogger('INFO', started ? { metrics: started } : {}) ? started : undefined;
  if (started && !metrics) {
    await started.shutdown();
    process.stderr.write('metrics: off (a Temporal runtime was installed in this process before the worker started)\n');
  }
  const connection = await connectWorker(config.temporal);
  try {
    // The agents write search attributes: a bare server gets them here, or the start stops saying how.
    if (!tools) await searchAttributesReady(connection, config.temporal.namespace);
    const options = { connection, config, shutdownGraceTime: '45 seconds', ...(metrics ? { metrics } : {}) } as const;
    stopOnSignals();
    if (tools) {
      const worker = await createToolWorker(options);
      process.stderr.write(
        `tool worker ready on ${config.temporal.address} (namespace ${config.temporal.namespace}, task queue ${config.toolTaskQueue}: tool calls only, no workflows, no LLM key); SIGTERM or Ctrl-C stops it\n${await sandboxReport(config.policy.limits)}\n${rootsReport(config)}\n`,
      );
      await worker.run();
      return;
    }
    const worker = await createWorker(options);
    process.stderr.write(
      `worker ready on ${config.temporal.address} (namespace ${config.temporal.namespace}, task queue ${config.taskQueue}${config.toolTaskQueue ? `, tools on task queue ${config.toolTaskQueue} (no tool code here)` : ''}, version ${worker.version.buildId} of deployment ${worker.version.deploymentName}); SIGTERM or Ctrl-C stops it\n`,
    );
    if (config.plugins?.length)
      process.stderr.write(
        `plugins: ${config.plugins.join(', ')} (their guides are offered besides the shipped ones; bundled into this version)\n`,
      );
    const { tracing } = config;
    if (tracing)
      process.stderr.write(
        `traces: ${tracing.exporter === 'console' ? 'to the console' : `OTLP/${tracing.protocol === 'grpc' ? 'gRPC' : 'HTTP'} to ${shownUrl(tracing.url)}`} as service ${tracing.serviceName}${tracing.ratio < 1 ? `, ${tracing.ratio * 100}% of tasks` : ''}\n`,
      );
    if (metrics) process.stderr.write(`metrics: ${metrics.where} as service ${config.metrics!.serviceName}\n`);
    // Whether programs can run here at all, and what bounds them: an operator's first question.
    if (!config.toolTaskQueue)
      process.stderr.write(`${await sandboxReport(config.policy.limits)}\n${rootsReport(config)}\n`);
    // The SDK shuts the worker down on SIGTERM/SIGINT; run() returns once it has drained.
    await worker.run();
  } finally {
    await connection.close();
    // The last counts of the run, exported before the process ends.
    await metrics?.shutdown();
  }
}

/** Where tasks' workspaces lie: the operator's roots, or the default folder. */
function rootsReport(config: WorkerConfig): string {
  return `workspaces: under ${config.policy.roots.join(', ')} (${config.rootsFrom ?? 'the default'}; a tenant's under <root>/<tenant>)`;
}

function stopOnSignals(): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const)
    process.once(signal, () =>
      process.stderr.write(`${signal}: stopping the worker (activities in flight may finish for 45 s)…\n`),
    );
}

if (require.main === module) {
  runWorker(undefined, { tools: process.argv.includes('--tools') }).catch((err) => {
    process.stderr.write(`worker failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
