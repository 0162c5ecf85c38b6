/**
 * Tools on a task queue of their own (`STARRY_TOOL_TASK_QUEUE`, docs/ARCHITECTURE.md#tool-workers): the
 * workflow worker's listing names the queue (its answer is in the history, so a replay routes the same);
 * then a tool worker there lists the tools, every tool call goes there waiting only so long for one to
 * pick it up, and a call no tool worker picked up fails the task naming the queue and what to start.
 * The queue is carried when the task continues as new. Without one, nothing here issues a command.
 */
import type { ActivityOptions } from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import { noToolWorkerError, notPicked, TOOL_CALL_START_TIMEOUT, TOOL_QUEUE_START_TIMEOUT } from '../tool-queue';
import type { TaskHook } from './hooks';
import type { TaskScope } from './scope';

export function toolQueue(t: TaskScope): TaskHook {
  let queue = t.input.toolTaskQueue;
  const onQueue = (opts: ActivityOptions, wait: Duration): ActivityOptions =>
    queue ? { ...opts, taskQueue: queue, scheduleToStartTimeout: wait } : opts;
  return {
    name: 'tool-queue',
    async toolsListed(t, listed, request) {
      if (!listed.toolTaskQueue) return undefined;
      // The workflow worker runs no tool code: a tool worker lists the tools; the price and the
      // telemetry stay the workflow worker's.
      queue = listed.toolTaskQueue;
      const tools = await t.call('tools', () =>
        t.activities.listTools.executeWithOptions(onQueue(t.options.listOnToolQueue, TOOL_QUEUE_START_TIMEOUT), [
          request,
        ]),
      );
      const { approval: _workflowWorkers, ...own } = listed;
      return {
        ...own,
        specs: tools.specs,
        shellAllow: tools.shellAllow,
        ...(tools.approval ? { approval: tools.approval } : {}),
      };
    },
    toolOptions: (_t, options) => onQueue(options, TOOL_CALL_START_TIMEOUT),
    toolFailure: (_t, err, source) =>
      queue && notPicked(err) ? { error: noToolWorkerError(queue, source), retriesExhausted: false } : undefined,
    carried: () => (queue ? { toolTaskQueue: queue } : {}),
  };
}
