/**
 * The activities the agent workflow runs itself: the worker's check of a task's config (at a submit and
 * before a resume) and the daemon's alerts. Its tasks run everything else.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { SubmittedTask } from '../../activities/tools';
import type { AgentConfig, TaskConfig } from '../../core/config';
import { budgetRefFor } from '../../core/budget';
import { firstLimits, runLimits } from '../../core/limits';
import type { PricingTable } from '../../core/pricing';
import { noToolWorker, notPicked, TOOL_QUEUE_START_TIMEOUT } from '../tool-queue';

// A regular activity, not a local one: several submits check at once, and concurrent local activities
// resume their handlers in completion order live but in scheduling order on replay, which reorders the
// handlers' commands. Activity completions are history events, so the order replays exactly.
const checkOptions = {
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '1 minute',
  retry: { initialInterval: '200 milliseconds', maximumAttempts: 3 },
} as const;
const { checkTaskLimits: checkOnWorkflowWorker } = proxyActivities<Activities>(checkOptions);

/**
 * The worker's submit check. A workflow worker whose tools run on a queue of their own answers its part
 * and names that queue: a tool worker there checks its policy and tools. None polls it: refused within
 * seconds, saying which queue and what to start.
 */
export async function checkTaskLimits(task: SubmittedTask): Promise<{ refused?: string }> {
  const first = await checkOnWorkflowWorker(task);
  const queue = first.toolTaskQueue;
  if (first.refused || !queue) return first;
  const { checkTaskLimits: onToolWorker } = proxyActivities<Activities>({
    ...checkOptions,
    taskQueue: queue,
    scheduleToStartTimeout: TOOL_QUEUE_START_TIMEOUT,
  });
  try {
    return await onToolWorker(task);
  } catch (err) {
    if (notPicked(err)) return { refused: noToolWorker(queue) };
    throw err;
  }
}

/** The daemon's alert (a lockout, a call that waits for a human). */
export const { alert } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/**
 * What the worker checks of a task's config at submit (and before a resume): its limits, tools, guide
 * and context strategy, what its cost budget needs, and the limits it would run with. The strategy is read loosely: a config carried
 * from a history recorded before context strategies has no `context`.
 */
export function submitted(agentId: string, config: TaskConfig, agent: AgentConfig | undefined): SubmittedTask {
  return {
    workspace: config.workspace,
    tools: config.tools,
    llm: config.llm,
    guide: config.guide,
    ...(config.context?.strategy ? { context: { strategy: config.context.strategy } } : {}),
    ...costCheck(config, agent),
    // The agent's shared budget, once it has one, is the one the task draws from (core/agent-entity/agent-limits.ts).
    ...((agent?.budget ?? config.budget) ? { budget: budgetRefFor(agentId, (agent?.budget ?? config.budget)!) } : {}),
    ...limitsCheck(agentId, config, agent),
  };
}

/**
 * The limits the task would run with, for the worker's ceilings (`agentLimits`): a new agent's first
 * limits, or its agent's tightened by its own. Limits that do not fit are left out: the agent refuses them.
 */
function limitsCheck(
  agentId: string,
  config: TaskConfig,
  agent: AgentConfig | undefined,
): Pick<SubmittedTask, 'limits'> {
  try {
    const safety = agent ? runLimits(agent.safety, config.safety) : firstLimits(config.safety);
    return { limits: { agentId, existing: agent !== undefined, safety } };
  } catch {
    return {};
  }
}

/**
 * What the submit check needs to know of a task's cost: the cost budget it runs with (its own, else its
 * agent's), and the config's own price table, which may not price its model below the worker's.
 */
function costCheck(
  task: Pick<TaskConfig, 'safety' | 'pricing'>,
  agent: AgentConfig | undefined,
): { costBudgetUsd?: number; pricing?: PricingTable } {
  const costBudgetUsd = task.safety.costBudgetUsd ?? agent?.safety.costBudgetUsd;
  return {
    ...(costBudgetUsd !== undefined ? { costBudgetUsd } : {}),
    ...(task.pricing ? { pricing: task.pricing } : {}),
  };
}
