/**
 * Facts only: what failed, with which code, from where. No pain, no persona; for agents (and people) that
 * want the Core's report unadorned.
 */
import { basePrompt } from './base-prompt';
import { countOf, describeFailure, REPEAT_ALERT_SENTENCE, suggestionLine } from './failure-facts';
import { defineGuide } from './define';
import type { Guide } from './guide';

/**
 * Failures as plain facts.
 *
 * ```ts
 * neutralGuide.interpretPain(normalizedError({ code: 'EPERM', message: 'denied', source: 'fs.read' }), ctx);
 * // 'Tool fs.read failed: EPERM: denied (source fs.read).'
 * ```
 */
export const neutralGuide: Guide = defineGuide({
  id: 'neutral',
  description: 'Facts only: tool, code, message, source and suggestion, with no interpretation.',

  systemPrompt(agent, tools) {
    return basePrompt(
      agent,
      {
        role: 'You are an OpenStarry agent: you work toward a goal by calling tools.',
        failures: 'It states the tool, the error code, the message, the source and, when there is one, a suggestion.',
      },
      tools,
    );
  },

  interpretPain(error, ctx) {
    const suggestion = suggestionLine(error);
    return suggestion === undefined ? describeFailure(error, ctx) : `${describeFailure(error, ctx)} ${suggestion}`;
  },

  interpretAlert(alert) {
    switch (alert.kind) {
      case 'REPEAT_ALERT':
        return REPEAT_ALERT_SENTENCE;
      case 'FRUSTRATION':
        return (
          `SYSTEM INTERVENTION: ${countOf(alert.consecutiveFailures, 'consecutive failed tool call')}. ` +
          'The remaining tool calls of this turn were skipped. Stop the current path and choose a different approach.'
        );
    }
  },
});
