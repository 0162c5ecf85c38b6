/**
 * The worker: the agent and task workflows plus every activity, on one task queue, as one Worker
 * Deployment Version (workers/versioning.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { createActivities, type ActivityDeps } from '../activities';
import { ToolRegistry, type ToolDefinition } from '../activities/tools';
import { workerConfigFromEnv, type WorkerConfig } from './env';
import { workflowBundleOptions } from './bundle';
import type { WorkerMetrics } from './metrics';
import { silentSpanSinks, startTracing, type TracingConfig } from './otel';
import { buildIdOf, DEPLOYMENT_NAME, makeVersionCurrent, type VersioningOptions } from './versioning';

export interface CreateWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  /**
   * A prebuilt bundle (tests share one); otherwise the config's, else lib/workflow-bundle.js, else bundled at start.
   */
  workflowBundlePath?: string;
  /** The worker's configuration; default: read from its environment (workers/env.ts). */
  config?: WorkerConfig;
  /**
   * The worker's own tools (made with `defineTool`), offered to every agent besides the built-in ones
   * (an agent's `tools.allow` narrows them). They run here: their code and credentials stay on the worker.
   */
  tools?: readonly ToolDefinition[];
  /** Activity settings over the config's (tests pass their own policy, alert sinks, providers). */
  activities?: Partial<ActivityDeps>;
  identity?: string;
  /**
   * How long activities in flight may run on after shutdown is asked (SIGTERM) before they are
   * cancelled and retried elsewhere. `starry worker` uses 45 s (the Fargate task's stopTimeout is 60 s);
   * embedded and test workers stop at once.
   */
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
  /** Temporal worker interceptors (e.g. an activity interceptor that observes or gates calls). */
  interceptors?: WorkerOptions['interceptors'];
  /** The worker's deployment, build id and who makes its version current, over the config's (workers/versioning.ts). */
  versioning?: VersioningOptions;
  /** Traces over the config's (workers/otel.ts); `false`: none. */
  tracing?: TracingConfig | false;
  /** Where trace export failures are logged; default the worker's logger (WARN). */
  tracingLog?: (message: string) => void;
  /**
   * The process's metrics (workers/metrics.ts), installed with its runtime: the activities record their
   * histograms there and the tasks count their facts. Absent: no metrics.
   */
  metrics?: Pick<WorkerMetrics, 'activityMeter'>;
  /** Workflows kept in memory between their tasks (the SDK's default otherwise); 0: each task replays its history. */
  maxCachedWorkflows?: number;
}

/** A worker and the Worker Deployment Version it runs as. */
export type VersionedWorker = Worker & { version: WorkerDeploymentVersion };

/**
 * The prebuilt bundle when there is one (`npm run build` writes lib/workflow-bundle.js beside the
 * compiled workflows), else the workflow sources, bundled at start.
 */
export function workflowSource(
  bundlePath?: string,
): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath' | 'bundlerOptions' | 'interceptors' | 'sinks'> {
  const prebuilt = path.join(__dirname, '..', 'workflow-bundle.js');
  // A replayer registers the trace sink too: a traced workflow calls it on replay (it drops the spans).
  const sinks = silentSpanSinks();
  if (bundlePath) return { workflowBundle: { codePath: bundlePath }, sinks };
  if (existsSync(prebuilt)) return { workflowBundle: { codePath: prebuilt }, sinks };
  const { workflowsPath, preloadModules, workflowInterceptorModules } = workflowBundleOptions();
  return {
    workflowsPath,
    bundlerOptions: { preloadModules },
    interceptors: { workflowModules: workflowInterceptorModules },
    sinks,
  };
}

/** The workflow bundle's code, read or bundled now: its hash is the worker's build id. */
async function workflowCode(bundlePath?: string): Promise<string> {
  const source = workflowSource(bundlePath);
  if (source.workflowBundle && 'codePath' in source.workflowBundle)
    return readFileSync(source.workflowBundle.codePath, 'utf8');
  const noop = () => undefined;
  const logger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };
  return (await bundleWorkflowCode({ ...workflowBundleOptions(), logger })).code;
}

/**
 * Create a worker.
 *
 * ```ts
 * const worker = await createWorker({ connection: await connectWorker() });
 * await worker.run();
 * ```
 */
export async function createWorker(opts: CreateWorkerOptions): Promise<VersionedWorker> {
  const config = opts.config ?? workerConfigFromEnv();
  const namespace = opts.namespace ?? config.temporal.namespace;
  const registry = opts.activities?.registry ?? new ToolRegistry(opts.tools ?? []);
  const versioning = { ...config.versioning, ...opts.versioning };
  const code = await workflowCode(opts.workflowBundlePath ?? config.workflowBundlePath);
  const tracingConfig = opts.tracing ?? config.tracing;
  const tracing = tracingConfig ? startTracing(tracingConfig, opts.tracingLog) : undefined;
  const interceptors: WorkerOptions['interceptors'] = tracing
    ? { ...opts.interceptors, activity: [...(opts.interceptors?.activity ?? []), tracing.activityInterceptor] }
    : opts.interceptors;
  const version: WorkerDeploymentVersion = {
    deploymentName: versioning.deploymentName ?? DEPLOYMENT_NAME,
    buildId: versioning.buildId ?? buildIdOf(code),
  };
  const options: WorkerOptions = {
    connection: opts.connection,
    namespace,
    taskQueue: opts.taskQueue ?? config.taskQueue,
    activities: createActivities({
      llm: config.llm,
      ...(config.pricing ? { pricing: config.pricing } : {}),
      ...opts.activities,
      policy: opts.activities?.policy ?? config.policy,
      registry,
      traces: tracing !== undefined,
      ...(tracingConfig && tracingConfig.captureContent ? { captureContent: true } : {}),
      ...(opts.metrics ? { metrics: opts.metrics.activityMeter } : {}),
      // After the spread, so alert sinks given without a webhook keep the configured ones.
      alerts: { ...config.alerts, namespace, ...opts.activities?.alerts },
    }),
    ...(opts.shutdownGraceTime ? { shutdownGraceTime: opts.shutdownGraceTime } : {}),
    // Heartbeats reach the server at least every 500 ms, so a cancellation (SYSTEM_HALT) lands fast.
    maxHeartbeatThrottleInterval: '500 milliseconds',
    defaultHeartbeatThrottleInterval: '500 milliseconds',
    ...(opts.identity ? { identity: opts.identity } : {}),
    ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
    ...(interceptors ? { interceptors } : {}),
    // Registered traced or not: a workflow that traced once may replay on any worker of its version.
    sinks: tracing?.sinks ?? silentSpanSinks(),
    workflowBundle: { code },
    // Every workflow type says how it moves between versions (workflows/index.ts): a type that forgot
    // would be pinned.
    workerDeploymentOptions: { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' },
  };
  const worker = Object.assign(await Worker.create(options), { version });
  const run = worker.run.bind(worker);
  worker.run = () => {
    const running = run();
    // Once it polls, the server lists its version: then it may become current (workers/versioning.ts).
    void makeVersionCurrent(
      opts.connection,
      namespace,
      version,
      versioning.makeCurrent ?? 'if-none',
      versionLog,
      () => worker.getState() === 'RUNNING',
    ).catch((err: unknown) => {
      if (worker.getState() === 'RUNNING')
        versionLog.warn(
          `could not make worker version ${version.buildId} current: ${err instanceof Error ? err.message : String(err)}`,
        );
    });
    // The MCP servers this worker started end with it (stdio children, HTTP sessions).
    return running.finally(() => Promise.all([registry.close(), tracing?.shutdown().catch(() => undefined)]));
  };
  return worker;
}

/** What the versioning step says goes to the worker's log (stderr, like its start line). */
const versionLog = {
  info: (message: string) => Runtime.instance().logger.info(message, { sdkComponent: 'versioning' }),
  warn: (message: string) => Runtime.instance().logger.warn(message, { sdkComponent: 'versioning' }),
};
