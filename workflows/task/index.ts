/**
 * The concerns around the task loop, in the order they run (workflows/task/hooks.ts): each is one
 * module. Adding a concern is adding it here.
 */
import type { TaskHook } from './hooks';
import { approvals } from './approvals';
import { budgetLease } from './budget-lease';
import { continueAsNewWhenSuggested } from './continue-as-new';
import { progress } from './progress';
import type { TaskScope } from './scope';
import { summary } from './summary';
import { toolQueue } from './tool-queue';
import { tracing } from './tracing';
import { workerLoss } from './worker-loss';

/** Every hook of a task run: a lost worker's call runs again first (innermost wrap last), then the rest. */
export function taskHooks(t: TaskScope): TaskHook[] {
  return [
    workerLoss(),
    tracing(t),
    toolQueue(t),
    continueAsNewWhenSuggested(),
    summary(),
    budgetLease(t),
    approvals(),
    progress(),
  ].filter((h): h is TaskHook => h !== undefined);
}

export { TaskScope } from './scope';
export { listen } from './messages';
export type { TaskHook, ToolCallInfo, ToolOutcome } from './hooks';
