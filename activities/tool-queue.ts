/**
 * A workflow worker's `listTools` and `checkTaskLimits` when its tools run on a task queue of their own
 * (`STARRY_TOOL_TASK_QUEUE`): it runs no tool code, so it answers only what is its own (the price of a
 * model, whether it traces and meters, its guides, strategies and budgets) and names the tool queue,
 * where a tool worker (`starry worker --tools`) lists the tools, checks its policy and runs the calls.
 */
import type { WorkerOffer } from '../core/plugins';
import { priceFor } from '../core/pricing';
import {
  refusedByWorkflowWorker,
  telemetryOf,
  type ListedTools,
  type ListToolsRequest,
  type SubmittedTask,
  type TaskLimitsAnswer,
  type WorkerPrices,
} from './tools';

/**
 * The activities of a workflow worker whose tools are on `toolTaskQueue`, named like the tool worker's.
 *
 * ```ts
 * const activities = { ...createToolQueueActivities('openstarry-tools', { traces: false }), ...llm };
 * ```
 */
export function createToolQueueActivities(
  toolTaskQueue: string,
  options: { traces: boolean; metrics?: boolean; offer?: WorkerOffer } & WorkerPrices,
): {
  listTools(req: ListToolsRequest): Promise<ListedTools>;
  checkTaskLimits(task: SubmittedTask): Promise<TaskLimitsAnswer>;
} {
  const { traces, metrics, pricing } = options;
  return {
    async listTools(req: ListToolsRequest): Promise<ListedTools> {
      const price = req.llm ? priceFor(pricing, req.llm) : undefined;
      return {
        specs: [],
        shellAllow: [],
        toolTaskQueue,
        ...(price ? { price } : {}),
        ...telemetryOf(traces, metrics),
      };
    },
    async checkTaskLimits(task: SubmittedTask): Promise<TaskLimitsAnswer> {
      const refused = await refusedByWorkflowWorker(task, options);
      return refused ? { refused } : { toolTaskQueue };
    },
  };
}
