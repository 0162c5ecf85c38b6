/**
 * One patch marker for many changes of a workflow (docs/ARCHITECTURE.md#replay). A run started since
 * the marker's id records that marker alone, and every change it stands for applies; a run recorded
 * before it replays with the markers it has. Each marker costs the history two events (core upserts
 * `TemporalChangeVersion` with it). A change after it is a patch of its own (`patched`, not `has`).
 */
import { patched } from '@temporalio/workflow';

/** Whether a change (a patch id) applies to this run. */
export type Changes = (patchId: string) => boolean;

/** Call at the start of the workflow function, so that a new run records `allChanges` at its first workflow task. */
export function changesOfThisRun(allChanges: string): Changes {
  const all = patched(allChanges);
  return (patchId) => all || patched(patchId);
}
