/** The workflow bundle's entry: everything registered on the worker. */
import { setWorkflowOptions } from '@temporalio/workflow';
import type * as Agent from './agent';
import type * as Budget from './budget';
import type * as Task from './task';

export type { AgentWorkflowInput } from './agent';
export type { BudgetWorkflowInput } from './budget';
export type { TaskRunInput, TaskRunOutput } from './task';

// Every new workflow evaluates the bundle's modules afresh (the SDK keeps workflows that share a V8
// context apart), so each type loads only its own: an agent does not build the task's modules, nor a
// task the agent's (0.5 ms of worker CPU a tick at 200 agents, docs/BENCHMARKS.md). webpack bundles a
// require() and runs the module at its first call.
/* eslint-disable @typescript-eslint/no-require-imports */

/** The long-lived agent (workflows/agent.ts). */
export function agentWorkflow(input: Agent.AgentWorkflowInput): Promise<void> {
  return (require('./agent') as typeof Agent).agentWorkflow(input);
}

/** One task's tick loop (workflows/task.ts). */
export function taskWorkflow(input: Task.TaskRunInput): Promise<Task.TaskRunOutput> {
  return (require('./task') as typeof Task).taskWorkflow(input);
}

/** A shared budget, the Budget Manager (workflows/budget.ts). */
export function budgetWorkflow(input: Budget.BudgetWorkflowInput): Promise<void> {
  return (require('./budget') as typeof Budget).budgetWorkflow(input);
}

// Both are pinned to the Worker Deployment Version they start on (docs/ARCHITECTURE.md#versioning): a
// task runs on one version's code from start to end; an agent's run too, and the agent moves to the
// current version at its continue-as-new (workflows/agent.ts).
setWorkflowOptions({ versioningBehavior: 'PINNED' }, agentWorkflow);
// A budget likewise moves to the current version at its continue-as-new.
setWorkflowOptions({ versioningBehavior: 'PINNED' }, budgetWorkflow);
// A bug in a task's workflow code (a plain Error) fails that task workflow instead of failing its
// workflow task, which Temporal would retry forever with the agent stuck EXECUTING. The agent sees the
// child fail and pauses (ERROR_PAUSED, FATAL, alert) for a human — see docs/ARCHITECTURE.md.
setWorkflowOptions({ versioningBehavior: 'PINNED', failureExceptionTypes: [Error] }, taskWorkflow);
