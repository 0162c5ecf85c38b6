/**
 * The floors of `bench/throughput.ts`: what Temporal itself costs, on the same server and worker
 * settings as the agents, with activities that do nothing. Not part of the runtime.
 * - `floorWorkflow`: one workflow of `iterations` × two no-op activities. Temporal's floor for a tick.
 * - `floorAgentWorkflow`: the same iterations in the agents' shape (docs/ARCHITECTURE.md#workflows): a
 *   long-lived agent workflow takes a task by an update (started with it), checks it with one activity,
 *   runs it as a child workflow, and both write the search attributes the Web UI lists. What a task of
 *   the project's shape costs Temporal before any of the project's own work.
 */
import {
  condition,
  defineUpdate,
  executeChild,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { AgentStateKey, TickIndexKey } from '../workflows/search-attributes';

const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '1 minute' });

/** A task for `floorAgentWorkflow`: its iterations; the answer is the child's workflow id. */
export const floorSubmitUpdate = defineUpdate<string, [number]>('floorSubmit');

/** `iterations` times: two no-op activities, one after the other (an agent tick is an LLM call, then a tool). */
export async function floorWorkflow(iterations: number): Promise<void> {
  for (let i = 0; i < iterations; i++) {
    await noop();
    await noop();
  }
}

/** A task of the agents' shape: the iterations, then its counts in its search attributes. */
export async function floorTaskWorkflow(iterations: number): Promise<void> {
  await floorWorkflow(iterations);
  upsertSearchAttributes([
    { key: TickIndexKey, value: iterations },
    { key: AgentStateKey, value: 'IDLE' },
  ]);
}

/**
 * An agent of the project's shape: each submit is checked by an activity and accepted, the task runs
 * as a child, and the agent's state is written when it starts and when it ends. Idle between tasks.
 */
export async function floorAgentWorkflow(): Promise<void> {
  const queue: { ticks: number; workflowId: string }[] = [];
  setHandler(floorSubmitUpdate, async (ticks) => {
    await noop();
    const workflowId = `${workflowInfo().workflowId}-task-${queue.length + 1}`;
    queue.push({ ticks, workflowId });
    return workflowId;
  });
  for (let i = 0; ; i++) {
    await condition(() => queue.length > i);
    const task = queue[i] as { ticks: number; workflowId: string };
    upsertSearchAttributes([{ key: AgentStateKey, value: 'RUNNING' }]);
    await executeChild(floorTaskWorkflow, {
      workflowId: task.workflowId,
      args: [task.ticks],
      typedSearchAttributes: [
        { key: AgentStateKey, value: 'RUNNING' },
        { key: TickIndexKey, value: 0 },
      ],
    });
    upsertSearchAttributes([
      { key: AgentStateKey, value: 'IDLE' },
      { key: TickIndexKey, value: task.ticks },
    ]);
  }
}
