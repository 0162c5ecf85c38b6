/**
 * Tasks longer than one history (docs/ARCHITECTURE.md, "Transcripts and the content store"): between
 * ticks, a task whose history Temporal suggests to continue as new does so, with its checkpoint and
 * everything it counted (`TaskRun.continuation`) and what each concern carries (`carried` hooks: the
 * lease, the tool queue, the telemetry switches), so no breaker starts over.
 */
import { continueAsNew, workflowInfo } from '@temporalio/workflow';
import { continueAsNewEvent } from '../../core/telemetry';
import { addEvents } from '../telemetry';
import type { TaskHook } from './hooks';

export const continueAsNewWhenSuggested = (): TaskHook => ({
  name: 'continue-as-new',
  async beforeTick(t) {
    const info = workflowInfo();
    if (!info.continueAsNewSuggested || t.halted()) return;
    t.flush();
    addEvents([continueAsNewEvent(t.run.checkpoint.ticks, info.historyLength)], t.span);
    await continueAsNew<(input: typeof t.input) => Promise<unknown>>({
      ...t.run.continuation(),
      ...t.hooks.carried(t),
    });
  },
});
