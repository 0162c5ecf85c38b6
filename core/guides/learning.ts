/**
 * The seeds' learning reading: a failure is the agent exploring its boundaries. EPERM means "this path is
 * blocked, let's find another"; every failure is information about where to go next.
 */
import type { ErrorCode, NormalizedError } from '../errors';
import { basePrompt } from './base-prompt';
import { countOf, describeFailure, lines, REPEAT_ALERT_SENTENCE, suggestionLine } from './failure-facts';
import { defineGuide } from './define';
import type { Guide } from './guide';

const UNREACHABLE = 'This resource did not answer. Look for another way to get what you need.';

// Keyed by code, not message: behaviour never depends on matching error text.
const READINGS: Partial<Record<ErrorCode, string>> = {
  EPERM: "You found a boundary. This path is blocked. Let's find another.",
  EACCES: "You found a boundary. This path is blocked. Let's find another.",
  ENOENT: 'Nothing is there. Now you know one place it is not: list the directory to see what does exist.',
  EISDIR: 'That path is a directory. List it with fs.list to see what it holds.',
  ENOTDIR: 'Part of that path is a file, not a directory. Step back one level and look around.',
  EEXIST: 'Something is already there. Read it first: it may be what you need.',
  EINVAL: 'The tool did not accept those arguments. Adjust them and try something different.',
  E_UNKNOWN_TOOL: 'That tool does not exist here. The suggestion lists the ones you have.',
  E_INVALID_JSON: 'Your arguments could not be parsed as JSON. Shape them as a JSON object next time.',
  E_SCHEMA: "The arguments had the wrong shape for this tool. Compare them with the tool's parameters.",
  E_OUTPUT_TOO_LARGE: 'The answer was too big to bring back. Ask a narrower question.',
  E_LIMIT: 'You reached a limit of your sandbox; the message says which. Find a lighter way to do it.',
  E_SKIPPED: 'This call was not run. Take stock before the next step.',
  E_DENIED: 'A person said no to this call, and told you why. Listen to the reason and find a way they would accept.',
  ETIMEDOUT: 'This took too long. Try a smaller or simpler step.',
  ECONNREFUSED: UNREACHABLE,
  ECONNRESET: UNREACHABLE,
  EAI_AGAIN: UNREACHABLE,
  E_UNAVAILABLE: UNREACHABLE,
  E_RATE_LIMIT: 'The service is asking you to slow down. Make fewer, better requests.',
};

/** The learning reading of a code; unlisted codes get a generic lesson. */
function reading(error: NormalizedError): string {
  return READINGS[error.code] ?? 'That did not work. Note what you learned and try a different approach.';
}

/**
 * Failures as lessons about where the boundaries are.
 *
 * ```ts
 * learningGuide.interpretPain(normalizedError({ code: 'EPERM', message: 'denied', source: 'fs.read' }), ctx);
 * // "You found a boundary. This path is blocked. Let's find another.\n..."
 * ```
 */
export const learningGuide: Guide = defineGuide({
  id: 'learning',
  description: 'Failures are lessons: EPERM means "this path is blocked, let\'s find another".',

  systemPrompt(agent, tools) {
    return basePrompt(
      agent,
      {
        role: 'You are a curious OpenStarry agent: you work toward a goal by calling tools, and you learn from every result.',
        failures:
          'It shows you where a boundary is. Use what it teaches you: take a different path instead of the blocked one.',
      },
      tools,
    );
  },

  interpretPain(error, ctx) {
    return lines(
      reading(error),
      describeFailure(error, ctx),
      suggestionLine(error),
      'What did this attempt teach you? Use it in your next step.',
    );
  },

  interpretAlert(alert) {
    switch (alert.kind) {
      case 'REPEAT_ALERT':
        return lines(
          REPEAT_ALERT_SENTENCE,
          `You tried ${alert.toolName} the same way ${countOf(alert.repeatCount, 'time')} and got the same answer each time.`,
          'The boundary is real. Try something new.',
        );
      case 'FRUSTRATION':
        return lines(
          'SYSTEM INTERVENTION: pause and re-plan.',
          `${countOf(alert.consecutiveFailures, 'attempt')} in a row failed, and the remaining tool calls of this turn were not executed.`,
          'This path is not working. Stop it, list what you have learned, then choose a different route.',
        );
    }
  },
});
