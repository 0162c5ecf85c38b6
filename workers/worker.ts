/**
 * The worker: the agent and task workflows plus every activity, on one task queue, as one Worker
 * Deployment Version (workers/versioning.ts). With `STARRY_TOOL_TASK_QUEUE`, two kinds: the workflow
 * worker (workflows, LLM calls, no tool code) and tool workers (`createToolWorker`: the tool activities
 * only, on that queue).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  bundleWorkflowCode,
  NativeConnection,
  Runtime,
  Worker,
  type BundleOptions,
  type WorkerOptions,
} from '@temporalio/worker';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { createActivities, createToolWorkerActivities, type ActivityDeps } from '../activities';
import { ToolRegistry, type ToolDefinition } from '../activities/tools';
import {
  DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS,
  toolWorkerConfigFromEnv,
  workerConfigFromEnv,
  type WorkerConfig,
} from './env';
import { workflowBundleOptions } from './bundle';
import { loadPlugins, pluginWorkflowsEntry, workerOffer, type LoadedPlugins } from './plugins';
import type { WorkerMetrics } from './metrics';
import { silentSpanSinks, startTracing, type TracingConfig } from './otel';
import { ConfigError } from '../core/errors';
import { buildIdOf, DEPLOYMENT_NAME, makeVersionCurrent, type MakeCurrent, type VersioningOptions } from './versioning';
import { storeFromEnv } from '../activities/store';
import { checkWorkerRoots } from './own-paths';
import { withPresence } from './tool-presence';
import { storeIdentity, storeMixAtStart } from './store-mix';

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
  /**
   * Plugin modules (absolute paths, paths relative to the working directory, or installed module names)
   * whose guides and context strategies this worker offers, over the config's (`STARRY_PLUGINS`). Their
   * code runs in the workflow sandbox: the worker bundles its workflows with them at start, so its build
   * id changes with their code (docs/LIBRARY.md#plugins). Not with `workflowBundlePath`.
   */
  plugins?: readonly string[];
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
  /**
   * Workflows kept in memory between their tasks, over the config's (`STARRY_MAX_CACHED_WORKFLOWS`);
   * neither: the SDK's default. 0: each task replays its history.
   */
  maxCachedWorkflows?: number;
}

/** A worker and the Worker Deployment Version it runs as. */
export type VersionedWorker = Worker & { version: WorkerDeploymentVersion };

/**
 * The prebuilt bundle when there is one (`npm run build` writes lib/workflow-bundle.js beside the
 * compiled workflows), else the workflow sources, bundled at start; with plugins (workers/plugins.ts),
 * always bundled at start, from the entry that registers them.
 */
export function workflowSource(
  bundlePath?: string,
  plugins?: LoadedPlugins,
): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath' | 'bundlerOptions' | 'interceptors' | 'sinks'> {
  const prebuilt = path.join(__dirname, '..', 'workflow-bundle.js');
  // A replayer registers the trace sink too: a traced workflow calls it on replay (it drops the spans).
  const sinks = silentSpanSinks();
  if (plugins && bundlePath)
    throw new ConfigError(
      'a prebuilt workflow bundle cannot hold plugin modules: give plugins (the worker bundles at start) or a bundle path, not both',
    );
  if (bundlePath) return { workflowBundle: { codePath: bundlePath }, sinks };
  if (!plugins && existsSync(prebuilt)) return { workflowBundle: { codePath: prebuilt }, sinks };
  const { workflowsPath, preloadModules, workflowInterceptorModules, webpackConfigHook } = bundleOptions(plugins);
  return {
    workflowsPath,
    bundlerOptions: { preloadModules, webpackConfigHook },
    interceptors: { workflowModules: workflowInterceptorModules },
    sinks,
  };
}

/**
 * The package's bundle options; with plugins, their generated entry in place of the workflows. That entry
 * lives outside the package, so the bundler is also told where the package's own dependencies are (the
 * SDK's entry point beside it imports `@temporalio/workflow`).
 */
function bundleOptions(
  plugins?: LoadedPlugins,
): ReturnType<typeof workflowBundleOptions> & Pick<BundleOptions, 'webpackConfigHook'> {
  const options = workflowBundleOptions();
  if (!plugins) return options;
  const workflowPackage = require.resolve('@temporalio/workflow');
  const nodeModules = workflowPackage.slice(0, workflowPackage.lastIndexOf(`${path.sep}node_modules${path.sep}`) + 13);
  return {
    ...options,
    workflowsPath: pluginWorkflowsEntry(plugins),
    webpackConfigHook: (given) => {
      const config = options.webpackConfigHook(given);
      return {
        ...config,
        resolve: { ...config.resolve, modules: [...(config.resolve?.modules ?? ['node_modules']), nodeModules] },
      };
    },
  };
}

/** The workflow bundle's code, read or bundled now: its hash is the worker's build id. */
export async function workflowCode(bundlePath?: string, plugins?: LoadedPlugins): Promise<string> {
  const source = workflowSource(bundlePath, plugins);
  if (source.workflowBundle && 'codePath' in source.workflowBundle)
    return readFileSync(source.workflowBundle.codePath, 'utf8');
  const noop = () => undefined;
  // webpack's report, kept to say why a bundle failed (a plugin module importing what cannot be bundled).
  const errors: string[] = [];
  const logger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: (m: string) => errors.push(m) };
  const { workflowsPath, bundlerOptions, interceptors } = source;
  try {
    const bundled = await bundleWorkflowCode({
      workflowsPath: workflowsPath!,
      preloadModules: bundlerOptions?.preloadModules ?? [],
      workflowInterceptorModules: interceptors?.workflowModules ?? [],
      ...(bundlerOptions?.webpackConfigHook ? { webpackConfigHook: bundlerOptions.webpackConfigHook } : {}),
      logger,
    });
    return bundled.code;
  } catch (err) {
    const report = errors
      .join('\n')
      .split('\n')
      .filter((line) => /ERROR|Module not found|Can't resolve/.test(line));
    if (!report.length) throw err;
    throw new Error(
      `cannot bundle the workflows${plugins ? ' with the plugin modules' : ''}: ${report.slice(0, 10).join('; ')}`,
      {
        cause: err,
      },
    );
  }
}

/** The workflow tasks a worker runs at once: the config's, else the default within a small cache (the SDK warns past it). */
export function workflowTaskSlots(configured: number | undefined, cache: number | undefined): number {
  if (configured !== undefined) return configured;
  return cache
    ? Math.max(2, Math.min(cache, DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS))
    : DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS;
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
  if (config.toolTaskQueue && opts.tools?.length)
    throw new ConfigError(
      `this worker's tools run on the tool task queue ${config.toolTaskQueue} (STARRY_TOOL_TASK_QUEUE), not here: ` +
        'give them to createToolWorker({ tools }) on the tool workers',
    );
  const namespace = opts.namespace ?? config.temporal.namespace;
  const registry = opts.activities?.registry ?? new ToolRegistry(opts.tools ?? []);
  const versioning = { ...config.versioning, ...opts.versioning };
  const pluginSpecs = opts.plugins ?? config.plugins ?? [];
  const policy = opts.activities?.policy ?? config.policy;
  const store = opts.activities?.store ?? storeFromEnv();
  // Before any plugin loads: a worker that runs tool calls never loads what a task can write.
  if (!config.toolTaskQueue)
    await checkWorkerRoots({
      ...ownOf(config, opts.activities?.policy),
      policy,
      store,
      plugins: pluginSpecs,
      ...((opts.workflowBundlePath ?? config.workflowBundlePath)
        ? { workflowBundlePath: opts.workflowBundlePath ?? config.workflowBundlePath }
        : {}),
    });
  // Loaded first: a missing or unusable plugin module stops the start before anything is bundled.
  const plugins = pluginSpecs.length ? loadPlugins(pluginSpecs) : undefined;
  // Given plugins in code, the environment's prebuilt bundle (STARRY_WORKFLOW_BUNDLE) gives way to them.
  const code = await workflowCode(
    opts.workflowBundlePath ?? (opts.plugins?.length ? undefined : config.workflowBundlePath),
    plugins,
  );
  const { tracing, interceptors, telemetry } = tracedActivities(opts, config);
  const maxCachedWorkflows = opts.maxCachedWorkflows ?? config.maxCachedWorkflows;
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
      policy,
      store,
      registry,
      offer: workerOffer(plugins),
      ...(config.toolTaskQueue ? { toolTaskQueue: config.toolTaskQueue } : {}),
      ...telemetry,
      // After the spread, so alert sinks given without a webhook keep the configured ones.
      alerts: { ...config.alerts, namespace, ...opts.activities?.alerts },
    }),
    ...(opts.shutdownGraceTime ? { shutdownGraceTime: opts.shutdownGraceTime } : {}),
    ...activityWorkerOptions(opts, store.where),
    ...(maxCachedWorkflows !== undefined ? { maxCachedWorkflows } : {}),
    maxConcurrentWorkflowTaskExecutions: workflowTaskSlots(
      config.maxConcurrentWorkflowTaskExecutions,
      maxCachedWorkflows,
    ),
    ...(interceptors ? { interceptors } : {}),
    // Registered traced or not: a workflow that traced once may replay on any worker of its version.
    sinks: tracing?.sinks ?? silentSpanSinks(),
    workflowBundle: { code },
    // Every workflow type says how it moves between versions (workflows/index.ts): a type that forgot
    // would be pinned.
    workerDeploymentOptions: { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' },
  };
  const worker = Object.assign(await Worker.create(options), { version });
  await warnOfStoreMix(opts.connection, { namespace, taskQueue: options.taskQueue, where: store.where });
  return becomesCurrent(worker, {
    connection: opts.connection,
    namespace,
    makeCurrent: versioning.makeCurrent ?? 'if-none',
    // The MCP servers this worker started end with it (stdio children, HTTP sessions).
    cleanup: () => Promise.all([registry.close(), tracing?.shutdown().catch(() => undefined)]),
  });
}

/**
 * The worker, its `run` made to make its version current once it polls (the server lists its version
 * then: workers/versioning.ts), and to clean up after itself when it stops.
 */
function becomesCurrent(
  worker: VersionedWorker,
  how: {
    connection: NativeConnection;
    namespace: string;
    makeCurrent: MakeCurrent;
    cleanup: () => Promise<unknown>;
  },
): VersionedWorker {
  const { version } = worker;
  const run = worker.run.bind(worker);
  worker.run = () => {
    const running = run();
    void makeVersionCurrent(
      how.connection,
      how.namespace,
      version,
      how.makeCurrent,
      versionLog,
      () => worker.getState() === 'RUNNING',
    ).catch((err: unknown) => {
      if (worker.getState() === 'RUNNING')
        versionLog.warn(
          `could not make worker version ${version.buildId} current: ${err instanceof Error ? err.message : String(err)}`,
        );
    });
    return running.finally(how.cleanup);
  };
  return worker;
}

/** Options of `createToolWorker`: those of `createWorker` that a worker without workflows and LLM calls has. */
export type CreateToolWorkerOptions = Pick<
  CreateWorkerOptions,
  | 'connection'
  | 'namespace'
  | 'taskQueue'
  | 'tools'
  | 'identity'
  | 'shutdownGraceTime'
  | 'interceptors'
  | 'tracing'
  | 'tracingLog'
  | 'metrics'
> & {
  /** Its configuration; default: read from its environment, which must hold no LLM key (workers/env.ts). */
  config?: WorkerConfig;
  /** Tool calls it runs at once (`STARRY_MAX_CONCURRENT_TOOL_CALLS`); default the config's, else the SDK's 100. */
  maxConcurrentToolCalls?: number;
  /** Tool activity settings over the config's (tests pass their own policy). */
  activities?: Partial<Pick<ActivityDeps, 'policy' | 'store' | 'registry' | 'alerts'>>;
};

/**
 * Create a tool worker (`starry worker --tools`): the tool activities only (built-in, the worker's own,
 * MCP; the tool half of the submit check), on the tool task queue, no workflows and no LLM call, and
 * its presence on the queue's presence queue (workers/tool-presence.ts). It is not versioned: the tool
 * activities' contract is their input, which versions keep compatible (docs/ARCHITECTURE.md#versioning).
 *
 * ```ts
 * const worker = await createToolWorker({ connection: await connectWorker() });
 * await worker.run();
 * ```
 *
 * @throws ConfigError when no tool task queue is configured, or (from the environment) an LLM key is set.
 */
export async function createToolWorker(opts: CreateToolWorkerOptions): Promise<Worker> {
  const config = opts.config ?? toolWorkerConfigFromEnv();
  const taskQueue = opts.taskQueue ?? config.toolTaskQueue;
  if (!taskQueue)
    throw new ConfigError('a tool worker needs its task queue: set STARRY_TOOL_TASK_QUEUE (or give taskQueue)');
  const registry = opts.activities?.registry ?? new ToolRegistry(opts.tools ?? []);
  const policy = opts.activities?.policy ?? config.policy;
  const store = opts.activities?.store ?? storeFromEnv();
  await checkWorkerRoots({ ...ownOf(config, opts.activities?.policy), policy, store });
  const { tracing, interceptors, telemetry } = tracedActivities(opts, config);
  const namespace = opts.namespace ?? config.temporal.namespace;
  const slots = opts.maxConcurrentToolCalls ?? config.maxConcurrentToolCalls;
  const worker = await Worker.create({
    connection: opts.connection,
    namespace,
    taskQueue,
    activities: createToolWorkerActivities({
      ...opts.activities,
      policy,
      store,
      registry,
      ...telemetry,
    }),
    ...(opts.shutdownGraceTime ? { shutdownGraceTime: opts.shutdownGraceTime } : {}),
    ...activityWorkerOptions(opts, store.where),
    ...(slots !== undefined ? { maxConcurrentActivityTaskExecutions: slots } : {}),
    ...(interceptors ? { interceptors } : {}),
  });
  await warnOfStoreMix(opts.connection, { namespace, taskQueue, where: store.where });
  const run = worker.run.bind(worker);
  worker.run = () => run().finally(() => Promise.all([registry.close(), tracing?.shutdown().catch(() => undefined)]));
  return withPresence(worker, { connection: opts.connection, namespace, toolQueue: taskQueue });
}

/** Where a worker's roots come from and the files it read its settings from, for `checkWorkerRoots`. */
function ownOf(config: WorkerConfig, given: unknown) {
  const llamaRuntime = config.llm.local?.env?.STARRY_LLAMA_RUNTIME;
  return {
    rootsFrom: given ? ('the policy given in code' as const) : (config.rootsFrom ?? ('the default' as const)),
    ...(config.settingsFiles ? { files: config.settingsFiles } : {}),
    ...(llamaRuntime ? { llamaRuntime } : {}),
  };
}

/**
 * The worker's traces (over its config's), the activity interceptor that opens their spans, and what its
 * activities are told of its telemetry (whether it traces, captures content, meters).
 */
function tracedActivities(
  opts: Pick<CreateWorkerOptions, 'tracing' | 'tracingLog' | 'interceptors' | 'metrics'>,
  config: WorkerConfig,
): {
  tracing?: ReturnType<typeof startTracing>;
  interceptors?: WorkerOptions['interceptors'];
  telemetry: Pick<ActivityDeps, 'traces' | 'captureContent' | 'metrics'>;
} {
  const tracingConfig = opts.tracing ?? config.tracing;
  const tracing = tracingConfig ? startTracing(tracingConfig, opts.tracingLog) : undefined;
  const interceptors: WorkerOptions['interceptors'] = tracing
    ? { ...opts.interceptors, activity: [...(opts.interceptors?.activity ?? []), tracing.activityInterceptor] }
    : opts.interceptors;
  return {
    ...(tracing ? { tracing } : {}),
    ...(interceptors ? { interceptors } : {}),
    telemetry: {
      traces: tracing !== undefined,
      ...(tracingConfig && tracingConfig.captureContent ? { captureContent: true } : {}),
      ...(opts.metrics ? { metrics: opts.metrics.activityMeter } : {}),
    },
  };
}

/**
 * What every worker that runs activities sets: fast heartbeats, and its identity (the given one, else
 * the SDK's) naming its transcript store, so workers on one queue with two stores are found (workers/store-mix.ts).
 */
function activityWorkerOptions(opts: Pick<CreateWorkerOptions, 'identity'>, store: string): Partial<WorkerOptions> {
  return {
    // Heartbeats reach the server at least every 500 ms, so a cancellation (SYSTEM_HALT) lands fast.
    maxHeartbeatThrottleInterval: '500 milliseconds',
    defaultHeartbeatThrottleInterval: '500 milliseconds',
    identity: storeIdentity(opts.identity, store),
  };
}

/** Say, in the worker's log, when the workers already on its queue use another store. */
async function warnOfStoreMix(
  connection: NativeConnection,
  facts: { namespace: string; taskQueue: string; where: string },
): Promise<void> {
  const warning = await storeMixAtStart(connection, facts);
  if (warning) Runtime.instance().logger.warn(warning, { sdkComponent: 'store' });
}

/** What the versioning step says goes to the worker's log (stderr, like its start line). */
const versionLog = {
  info: (message: string) => Runtime.instance().logger.info(message, { sdkComponent: 'versioning' }),
  warn: (message: string) => Runtime.instance().logger.warn(message, { sdkComponent: 'versioning' }),
};
