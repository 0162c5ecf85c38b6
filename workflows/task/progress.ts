/**
 * What a running task tells the world: its search attributes and current details (the Web UI, `starry
 * list`), and its progress to its agent every `PROGRESS_EVERY_TICKS` ticks. The progress hook reports
 * after each tick; the loop and the other hooks report the states they enter (waiting for a human, the end).
 */
import {
  CancellationScope,
  getExternalWorkflowHandle,
  isCancellation,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { TaskRun } from '../../core/task-run';
import type { AgentState, TaskOutcome } from '../../core/types';
import { taskProgressSignal } from '../messages';
import { searchAttributes, TickIndexKey, TokensUsedKey } from '../search-attributes';
import type { TaskHook } from './hooks';

/**
 * Live state for the Web UI and the agent's `state` query: the search attributes that changed, and the
 * current details. The tick and token counts alone are written every `PROGRESS_EVERY_TICKS` ticks (each
 * write is a visibility write); a new state, error code or lock reason, and the close, at once.
 */
export function report(run: TaskRun, agentState: AgentState, lockReason?: string, closedAs?: TaskOutcome): void {
  const closing = closedAs !== undefined;
  const current = workflowInfo().typedSearchAttributes;
  const changed = searchAttributes(run.reported(agentState, closing, lockReason)).filter(
    (u) => (current.get(u.key) ?? null) !== u.value,
  );
  const countsOnly = changed.every((u) => u.key === TickIndexKey || u.key === TokensUsedKey);
  if (changed.length && (closing || !countsOnly || run.progressDue())) upsertSearchAttributes(changed);
  setCurrentDetails(run.details(agentState, lockReason, closedAs));
}

/**
 * The tick's progress to the agent, every `PROGRESS_EVERY_TICKS` ticks, sent alongside the next LLM
 * call and not waited for (each report costs the agent a workflow task; a wait would cost the tick
 * one more). The agent ignores a report that arrives after its task ended; clients read the live
 * counts from the task's `progress` query.
 */
export function reportProgress(run: TaskRun, root: CancellationScope): void {
  if (!run.progressDue()) return;
  root
    .run(() => sendToAgent((parent) => getExternalWorkflowHandle(parent).signal(taskProgressSignal, run.progress())))
    .catch(() => undefined);
}

/** Signal the parent agent, best effort: the agent may have closed (halted, continued-as-new). */
export async function sendToAgent(send: (parentWorkflowId: string) => Promise<void>): Promise<void> {
  const parent = workflowInfo().parent;
  if (!parent) return;
  try {
    await send(parent.workflowId);
  } catch (err) {
    if (isCancellation(err)) throw err;
  }
}

/** After each tick: the task's live state, and its progress to the agent when due. */
export const progress = (): TaskHook => ({
  name: 'progress',
  tickEnded(t) {
    report(t.run, 'EXECUTING');
    reportProgress(t.run, t.root);
  },
});
