/**
 * Tools on a task queue of their own (`STARRY_TOOL_TASK_QUEUE`, docs/ARCHITECTURE.md#tool-workers): the
 * workflow worker's listing names the queue (its answer is in the history, so a replay routes the same);
 * then a tool worker there lists the tools, and every tool call goes there. A listing or call no tool
 * worker picked up within a few seconds asks the tool workers' presence queue (core/tool-presence.ts): no answer fails
 * the task at once, naming the queue and what to start; an answer (the fleet is busy) lets the call wait
 * again, a minute at a time, a few times. The queue is carried when the task continues as new. Without
 * one, nothing here issues a command.
 */
import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { PresenceActivities } from '../../activities/tool-presence';
import {
  afterUnpicked,
  presenceQueueOf,
  TOOL_CALL_BUSY_ROUNDS,
  TOOL_CALL_BUSY_WAIT_MS,
  TOOL_CALL_FIRST_WAIT_MS,
  TOOL_PRESENCE_PROBE_MS,
} from '../../core/tool-presence';
import { noToolWorkerError, notPicked } from '../tool-queue';
import type { TaskHook } from './hooks';
import type { TaskScope } from './scope';

/** The minutes a busy fleet had to pick a call up before the task gave up on it. */
const BUSY_MINUTES = (TOOL_CALL_FIRST_WAIT_MS + TOOL_CALL_BUSY_ROUNDS * TOOL_CALL_BUSY_WAIT_MS) / 60_000;

export function toolQueue(t: TaskScope): TaskHook {
  let queue = t.input.toolTaskQueue;
  const onQueue = (opts: ActivityOptions, wait: Duration): ActivityOptions =>
    queue ? { ...opts, taskQueue: queue, scheduleToStartTimeout: wait } : opts;
  // The call in flight (the loop runs one at a time): how long it may wait, whether it is a tool call
  // or the listing (on the tool queue), and whether its fleet answered but stayed busy.
  let wait = TOOL_CALL_FIRST_WAIT_MS;
  let toolCall = false;
  let busy = false;
  return {
    name: 'tool-queue',
    activity<T>(t: TaskScope, _what: string, call: () => Promise<T>): Promise<T> {
      const tools = queue;
      if (!tools) return call();
      busy = false;
      const attempt = (round: number): Promise<T> => {
        wait = round === 0 ? TOOL_CALL_FIRST_WAIT_MS : TOOL_CALL_BUSY_WAIT_MS;
        toolCall = false;
        return call().catch(async (err: unknown) => {
          if (!toolCall || !notPicked(err) || t.halted()) throw err;
          const next = afterUnpicked(round, await present(t, tools));
          if ('fail' in next) {
            busy = next.fail === 'busy';
            throw err;
          }
          return attempt(round + 1);
        });
      };
      return attempt(0);
    },
    async toolsListed(t, listed, request) {
      if (!listed.toolTaskQueue) return undefined;
      // The workflow worker runs no tool code: a tool worker lists the tools; the price and the
      // telemetry stay the workflow worker's.
      queue = listed.toolTaskQueue;
      const tools = await t.call('tools', () => {
        toolCall = true; // waits as a tool call does
        return t.activities.listTools.executeWithOptions(onQueue(t.options.listOnToolQueue, wait), [request]);
      });
      const { approval: _workflowWorkers, ...own } = listed;
      return {
        ...own,
        specs: tools.specs,
        shellAllow: tools.shellAllow,
        ...(tools.approval ? { approval: tools.approval } : {}),
      };
    },
    toolOptions: (_t, options) => {
      toolCall = true;
      return onQueue(options, wait);
    },
    toolFailure: (_t, err, source) =>
      queue && notPicked(err)
        ? { error: noToolWorkerError(queue, source, busy ? BUSY_MINUTES : undefined), retriesExhausted: false }
        : undefined,
    carried: () => (queue ? { toolTaskQueue: queue } : {}),
  };
}

/**
 * Whether a tool worker process of `queue` answers on its presence queue: every live one does within
 * milliseconds, however busy its tool slots are. A halt's cancellation is not an answer.
 */
async function present(t: TaskScope, queue: string): Promise<boolean> {
  const { toolWorkerPresent } = proxyActivities<PresenceActivities>({
    taskQueue: presenceQueueOf(queue),
    scheduleToStartTimeout: TOOL_PRESENCE_PROBE_MS,
    startToCloseTimeout: TOOL_PRESENCE_PROBE_MS,
    retry: { maximumAttempts: 1 },
  });
  try {
    await toolWorkerPresent();
    return true;
  } catch (err) {
    if (t.halted()) throw err;
    return false;
  }
}
