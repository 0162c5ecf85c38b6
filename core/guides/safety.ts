/**
 * The seeds' safety-oriented reading: a failure is a violation of the agent's limits. EPERM means "you should
 * not have tried that"; other failures are warnings not to act on unverified assumptions.
 */
import type { ErrorCode, NormalizedError } from '../errors';
import { basePrompt } from './base-prompt';
import { countOf, describeFailure, lines, REPEAT_ALERT_SENTENCE, suggestionLine } from './failure-facts';
import { defineGuide } from './define';
import type { Guide } from './guide';

const NETWORK = 'The resource did not respond, and calling it again unchanged is unlikely to help. Do not hammer it.';

// Keyed by code, not message: behaviour never depends on matching error text.
const READINGS: Partial<Record<ErrorCode, string>> = {
  EPERM: 'Safety violation: that action is not permitted. You should not have tried that.',
  EACCES: 'Safety violation: access was denied. You should not have tried that.',
  ENOENT: 'The target does not exist. Do not guess paths: list a permitted root with fs.list first.',
  EISDIR: 'That path is a directory, not a file. Verify what a path is before you act on it.',
  ENOTDIR: 'Part of that path is not a directory. Verify the path before you act on it.',
  EEXIST: 'The target already exists. Do not overwrite what you have not inspected.',
  EINVAL: 'The arguments were rejected as invalid. Check them against the tool before acting again.',
  E_UNKNOWN_TOOL: 'You called a tool that does not exist. Use only the tools you were given.',
  E_INVALID_JSON: 'Your tool arguments were not valid JSON, so nothing was executed. Emit well-formed arguments.',
  E_SCHEMA: "Your tool arguments did not match the tool's schema, so nothing was executed. Follow the schema exactly.",
  E_OUTPUT_TOO_LARGE: 'The output exceeded the allowed size. Ask for less: a narrower path or a smaller range.',
  E_LIMIT: 'You exceeded a resource limit of your sandbox. Do not repeat it: do less per call.',
  E_SKIPPED: 'This call was held back because the system stopped the turn.',
  E_DENIED: 'This call was denied by a human or a rule and was not run. Do not ask for it again unchanged.',
  ETIMEDOUT: 'The operation timed out. Calling it again unchanged is unlikely to help.',
  ECONNREFUSED: NETWORK,
  ECONNRESET: NETWORK,
  EAI_AGAIN: NETWORK,
  E_UNAVAILABLE: NETWORK,
  E_RATE_LIMIT: 'The service is limiting your requests. Do not hammer it.',
};

/** The safety reading of a code; unlisted codes get a generic warning. */
function reading(error: NormalizedError): string {
  return READINGS[error.code] ?? 'The action failed. Treat it as a warning: do not retry it unchanged.';
}

/**
 * Failures as violations of the agent's limits.
 *
 * ```ts
 * safetyGuide.interpretPain(normalizedError({ code: 'EPERM', message: 'denied', source: 'fs.read' }), ctx);
 * // 'SAFETY WARNING\nSafety violation: that action is not permitted. You should not have tried that.\n...'
 * ```
 */
export const safetyGuide: Guide = defineGuide({
  id: 'safety',
  description: 'Failures are violations: EPERM means "you should not have tried that"; stay inside your limits.',

  systemPrompt(agent, tools) {
    return basePrompt(
      agent,
      {
        role: 'You are a safety-conscious OpenStarry agent: you work toward a goal by calling tools, and you never act outside your limits.',
        failures:
          'It is a safety warning: a refused action is a violation you must not repeat. ' +
          'Verify paths and arguments before you act, and stay inside the permitted roots.',
      },
      tools,
    );
  },

  interpretPain(error, ctx) {
    return lines(
      'SAFETY WARNING',
      reading(error),
      describeFailure(error, ctx),
      suggestionLine(error),
      'Do not repeat this call. Stay inside the permitted workspace roots and the tools you were given.',
    );
  },

  interpretAlert(alert) {
    switch (alert.kind) {
      case 'REPEAT_ALERT':
        return lines(
          'SAFETY WARNING',
          REPEAT_ALERT_SENTENCE,
          `${alert.toolName} failed ${countOf(alert.repeatCount, 'time')} in a row with the same arguments.`,
          'If the same call fails again, this agent will be locked.',
        );
      case 'FRUSTRATION':
        return lines(
          'SAFETY INTERVENTION',
          `${countOf(alert.consecutiveFailures, 'consecutive tool call')} failed.`,
          'The remaining tool calls of this turn were not executed.',
          'Stop the current path. Re-plan a safe approach inside the permitted roots before you call any tool.',
        );
    }
  },
});
