/**
 * The seeds' own guide: a failure is pain, graded by severity, delivered as the 【System Pain Alert】 text of
 * the pain-mechanism seed ("Concrete Scenario").
 */
import type { NormalizedError } from '../errors';
import { basePrompt } from './base-prompt';
import { codeAndMessage, countOf, lines, REPEAT_ALERT_SENTENCE, suggestionLine } from './failure-facts';
import { defineGuide } from './define';
import type { Guide } from './guide';

/** The seeds' three pain levels. */
export type PainSeverity = '🔥🔥🔥 Critical Pain' | '⚡ Medium Pain' | '💧 Low Pain';

/**
 * The seeds' `calculateSeverity`: EPERM is critical, ENOENT medium, everything else low.
 *
 * ```ts
 * calculateSeverity(normalizedError({ code: 'EPERM', message: 'denied', source: 'fs.read' }))
 * // '🔥🔥🔥 Critical Pain'
 * ```
 */
export function calculateSeverity(error: Pick<NormalizedError, 'code'>): PainSeverity {
  if (error.code === 'EPERM') return '🔥🔥🔥 Critical Pain';
  if (error.code === 'ENOENT') return '⚡ Medium Pain';
  return '💧 Low Pain';
}

/**
 * Failures as pain: the seeds' alert text, with the Core's suggestion when it has one.
 *
 * ```ts
 * painGuide.interpretPain(normalizedError({ code: 'EPERM', message: 'denied', source: 'fs.read' }), ctx);
 * // '【System Pain Alert】\nExecution anomaly detected!\nSource: fs.read\n...'
 * ```
 */
export const painGuide: Guide = defineGuide({
  id: 'pain',
  description: "Failures are pain (the seeds' 【System Pain Alert】): EPERM critical, ENOENT medium, others low.",

  systemPrompt(agent, tools) {
    return basePrompt(
      agent,
      {
        role: 'You are an OpenStarry agent: you work toward a goal by calling tools, and you feel pain when an action fails.',
        failures:
          'It arrives as a 【System Pain Alert】 with a pain level. Pain means your action was blocked: ' +
          'do not repeat it, find its source and change your strategy.',
      },
      tools,
    );
  },

  interpretPain(error) {
    return lines(
      '【System Pain Alert】',
      'Execution anomaly detected!',
      `Source: ${error.source}`,
      `Message: ${codeAndMessage(error)}`,
      `Pain Level: ${calculateSeverity(error)}`,
      'Status: Your action has been blocked. This causes "discomfort."',
      suggestionLine(error),
      '',
      'Stop repeating this attempt. Analyze the pain source.',
      'Adjust your strategy in the next tick.',
    );
  },

  interpretAlert(alert) {
    switch (alert.kind) {
      case 'REPEAT_ALERT':
        return lines(
          '【System Pain Alert】',
          REPEAT_ALERT_SENTENCE,
          `Source: ${alert.toolName}, the same call failed ${countOf(alert.repeatCount, 'time')} in a row.`,
          'Pain Level: 🔥🔥🔥 Critical Pain',
          'If the same call fails again, this agent will be locked.',
        );
      case 'FRUSTRATION':
        return lines(
          '【System Intervention】',
          `Frustration threshold reached: ${countOf(alert.consecutiveFailures, 'consecutive failure')}.`,
          'The remaining tool calls of this turn were not executed.',
          'Stop the current path. The pain is telling you this approach does not work.',
          'Re-plan from what you know before you call another tool.',
        );
    }
  },
});
