/**
 * A worker plugin module (docs/LIBRARY.md#plugins): the guide `careful` and the context strategy `short`,
 * which the example's worker offers besides the shipped ones (`createWorker({ plugins: [this file] })`). The worker bundles it into its
 * workflow code, where it runs in Temporal's deterministic sandbox: it imports only
 * `openstarry-temporal/plugins`, and its functions are pure (the same input gives the same text).
 *
 * A guide's text is versioned by its id: to change what `careful` says, ship `careful-v2` beside it
 * (docs/ARCHITECTURE.md#guides).
 */
import {
  basePrompt,
  defineGuide,
  describeFailure,
  REPEAT_ALERT_SENTENCE,
  suggestionLine,
  windowStart,
  type ContextStrategy,
  type WorkerPlugin,
} from 'openstarry-temporal/plugins';

/** Failures as a reminder to look before acting: list the folder rather than guess a path. */
export const careful = defineGuide({
  id: 'careful',
  description: 'Failures are a reminder to look before acting: list, then act.',
  // The shared prompt (goal, roots, tools, limits, how to finish) in this guide's voice.
  systemPrompt: (agent, tools) =>
    basePrompt(
      agent,
      {
        role: 'You are a careful agent: you look before you act.',
        failures: 'It comes back as a CAREFUL note: look at what is there before you try again.',
      },
      tools,
    ),
  interpretPain: (error, ctx) =>
    [
      `CAREFUL: ${describeFailure(error, ctx)}`,
      suggestionLine(error),
      'Look before you act again: list the folder (fs.list) rather than guess a path.',
    ]
      .filter(Boolean)
      .join('\n'),
  interpretAlert: (alert) =>
    alert.kind === 'REPEAT_ALERT'
      ? `${REPEAT_ALERT_SENTENCE} CAREFUL: ${alert.toolName} failed ${alert.repeatCount} times in a row.`
      : `CAREFUL: ${alert.consecutiveFailures} failed calls in a row. Stop, list what is there, and re-plan.`,
});

/**
 * The newest turns that fit, but never more than 10 messages after the head: a task that reads many
 * files keeps its requests short. Pure like a guide (docs/LIBRARY.md#your-own-context-strategy).
 */
export const short: ContextStrategy = {
  id: 'short',
  description: 'the newest turns that fit, at most 10 messages after the head',
  plan(view) {
    const fits = windowStart(view.entries, { ...view.limits, maxMessages: 10 });
    return { start: Math.max(fits, view.previousStart ?? view.limits.anchored) };
  },
};

/** What the worker reads from a plugin module: its guides and its context strategies. */
export const guides: WorkerPlugin['guides'] = [careful];
export const contextStrategies: WorkerPlugin['contextStrategies'] = [short];
