/**
 * Every activity the worker registers. Workflows import this file's *type* only.
 */
import { createAlertActivities, type AlertSinks } from './alert';
import { createBudgetActivities } from './budget';
import { createLlmActivities, type LlmProviderOptions } from './llm';
import type { WorkerPolicy } from '../core/worker-policy';
import { createToolActivities, type ToolRegistry } from './tools';
import { createToolQueueActivities } from './tool-queue';
import { storeFromEnv, type BlobStore } from './store';
import { transcriptStore } from './transcript';
import type { ActivityMeter } from './metrics';
import type { PricingTable } from '../core/pricing';
import type { WorkerOffer } from '../core/plugins';

export interface ActivityDeps {
  alerts?: AlertSinks;
  /** LLM provider settings (credentials, endpoints); absent fields come from the worker's environment. */
  llm?: LlmProviderOptions;
  /** The operator's outer limits for every tool call (workers/env.ts reads them). */
  policy: WorkerPolicy;
  /**
   * Where transcripts live (the worker's environment chooses: STARRY_STORE_BUCKET, STARRY_STORE_DIR, or the dev
   * server's folder).
   */
  store?: BlobStore;
  /**
   * The worker's tools: the built-in ones plus `tools`, and the MCP connections (default: a registry of the built-in
   * ones).
   */
  registry?: ToolRegistry;
  /**
   * The guides and context strategies this worker offers (workers/plugins.ts): the submit check refuses a
   * task naming another. Default: the shipped guides.
   */
  offer?: WorkerOffer;
  /** The worker traces (workers/otel.ts): `listTools` tells each task to turn its spans on. */
  traces?: boolean;
  /** The operator opted in to content on the spans: the LLM and tool activities add it to their attempt's span. */
  captureContent?: boolean;
  /**
   * The worker's metrics (workers/metrics.ts): the LLM and tool activities record their histograms here,
   * and `listTools` tells each task to count its facts.
   */
  metrics?: ActivityMeter;
  /**
   * The worker's price table (`STARRY_PRICING`, core/pricing.ts): `listTools` gives each task the price of
   * its model, `checkTaskLimits` refuses a task with a cost budget and no price.
   */
  pricing?: PricingTable;
  /**
   * The tool activities' own task queue (`STARRY_TOOL_TASK_QUEUE`): this worker then runs no tool code;
   * its `listTools` and `checkTaskLimits` answer its own part and send the task to that queue.
   */
  toolTaskQueue?: string;
}

/**
 * The activities of a worker that runs the workflows: the LLM, alert and budget ones, and the tool ones
 * unless its tools have a task queue of their own (`deps.toolTaskQueue`).
 *
 * ```ts
 * const activities = createActivities({ policy: workerConfigFromEnv().policy });
 * ```
 */
export function createActivities(deps: ActivityDeps) {
  const transcripts = transcriptStore(deps.store ?? storeFromEnv());
  const own = {
    traces: deps.traces ?? false,
    ...(deps.offer ? { offer: deps.offer } : {}),
    ...(deps.pricing ? { pricing: deps.pricing } : {}),
  };
  return {
    ...createLlmActivities(deps.llm ?? {}, transcripts, deps.policy, {
      meter: deps.metrics,
      pricing: deps.pricing,
      captureContent: deps.captureContent,
    }),
    ...(deps.toolTaskQueue
      ? createToolQueueActivities(deps.toolTaskQueue, { ...own, metrics: deps.metrics !== undefined })
      : toolActivities(deps, transcripts, own)),
    ...createAlertActivities(deps.alerts),
    ...createBudgetActivities(),
  };
}

/**
 * A tool worker's activities (`starry worker --tools`): the tool ones only, named as the workflows call them.
 *
 * ```ts
 * const activities = createToolWorkerActivities({ policy: workerConfigFromEnv().policy });
 * ```
 */
export function createToolWorkerActivities(deps: Omit<ActivityDeps, 'llm' | 'pricing' | 'offer' | 'toolTaskQueue'>) {
  return toolActivities(deps, transcriptStore(deps.store ?? storeFromEnv()), {
    traces: deps.traces ?? false,
    toolsOnly: true,
  });
}

function toolActivities(
  deps: ActivityDeps,
  transcripts: ReturnType<typeof transcriptStore>,
  options: Parameters<typeof createToolActivities>[3],
) {
  return createToolActivities(deps.policy, transcripts, deps.registry, {
    ...options,
    ...(deps.captureContent ? { captureContent: true } : {}),
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  });
}

/** Every activity a workflow calls, whichever worker runs it (the tool ones may be on the tool task queue). */
export type Activities = ReturnType<typeof createActivities> & ReturnType<typeof createToolWorkerActivities>;
