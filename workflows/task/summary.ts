/**
 * The `summarize` context strategy's call (docs/ARCHITECTURE.md#context-strategies): when this tick's
 * window drops turns, the same model summarizes them first, in a call of its own (only then: other
 * strategies add no command). A summary that fails costs the task nothing but the summary: the window
 * drops the turns without one. `TaskRun` decides when it is due and keeps what it wrote.
 */
import { log } from '@temporalio/workflow';
import { llmLabel } from '../../core/llm-spec';
import { factsOf } from '../activity-facts';
import type { TaskHook } from './hooks';

export const summary = (): TaskHook => ({
  name: 'summary',
  async tickStarted(t) {
    const due = t.run.summaryDue();
    if (!due) return undefined;
    const { config, options, activities } = t;
    try {
      const written = await t.call(`summarize · tick ${due.tick}`, () =>
        activities.summarize.executeWithOptions(
          { ...options.llm, summary: `summarize ${llmLabel(config.llm)} · tick ${due.tick}` },
          [due],
        ),
      );
      t.run.summarized(written);
      // The summary's tokens are spent like a tick's call (a shared budget's lease is charged).
      t.hooks.spent(t, written.usage);
    } catch (err) {
      if (t.haltedBy(err)) return t.run.cancelled();
      const { error } = factsOf(err, `summarize ${config.llm.provider}`);
      log.warn('the summary call failed: the oldest turns leave the context without a summary', {
        tick: due.tick,
        code: error.code,
        message: error.message,
      });
      t.run.summaryFailed(error, due);
    }
    return undefined;
  },
});
