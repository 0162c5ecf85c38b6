/**
 * The seeds' debugging reading: a failure is diagnostic data. EPERM means "permission issue detected, check
 * file ownership"; the text is laid out as a report the model can reason over.
 */
import type { ErrorCode, NormalizedError } from '../errors';
import { basePrompt } from './base-prompt';
import { countOf, lines, REPEAT_ALERT_SENTENCE } from './failure-facts';
import { defineGuide } from './define';
import type { Guide } from './guide';

const PERMISSION =
  'Permission issue detected. Check file ownership. Also check that the path lies inside a permitted root.';
const NETWORK = 'Connection failure: the remote side did not answer. Check the host and whether it is allowed.';
/** Enough of the arguments to see the mistake, without replaying a whole `fs.write` payload. */
const MAX_ARGS_CHARS = 200;

// Keyed by code, not message: behaviour never depends on matching error text.
const DIAGNOSES: Partial<Record<ErrorCode, string>> = {
  EPERM: PERMISSION,
  EACCES: PERMISSION,
  ENOENT: 'Missing path detected. Check the spelling and list the parent directory.',
  EISDIR: 'Type mismatch: the path is a directory. Use fs.list for directories.',
  ENOTDIR: 'Type mismatch: a component of the path is not a directory. Check each component.',
  EEXIST: 'Conflict: the target already exists. Inspect it before writing.',
  EINVAL: "Invalid argument. Check each value against the tool's parameters.",
  E_UNKNOWN_TOOL: 'Unknown tool name. Call only a tool the suggestion lists.',
  E_INVALID_JSON: 'Malformed arguments: the JSON did not parse. Check quotes, commas and brackets.',
  E_SCHEMA: "Argument schema mismatch. Compare field names and types with the tool's parameters.",
  E_OUTPUT_TOO_LARGE: 'Output over the size limit. Narrow the request.',
  E_LIMIT:
    'Resource limit reached: the message names which one. Do less per call: fewer processes, less data, smaller files.',
  E_SKIPPED: 'Not executed: the system stopped this turn before the call ran.',
  E_DENIED: 'Not executed: approval was refused or never given. The message carries the reason; plan around it.',
  ETIMEDOUT: 'Timeout: the operation did not finish in time. Reduce the work per call.',
  ECONNREFUSED: NETWORK,
  ECONNRESET: NETWORK,
  EAI_AGAIN: 'Name resolution failure. Check the host name.',
  E_UNAVAILABLE: 'Service unavailable. The failure is on the remote side.',
  E_RATE_LIMIT: 'Rate limited by the remote service. Reduce the request rate.',
};

/** The diagnosis for a code; unlisted codes are reported as unclassified. */
function diagnosis(error: NormalizedError): string {
  return DIAGNOSES[error.code] ?? 'Unclassified failure. Read the message and form a hypothesis.';
}

/** The call's arguments as compact JSON, cut to a readable length. */
function formatArgs(args: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(args);
  } catch {
    // Arguments come from the model as JSON, so this is only a guard against a caller's odd value.
    json = undefined;
  }
  if (json === undefined) return '(none)';
  return json.length > MAX_ARGS_CHARS ? `${json.slice(0, MAX_ARGS_CHARS)}… (${json.length} chars)` : json;
}

/**
 * Failures as diagnostic reports.
 *
 * ```ts
 * debuggingGuide.interpretPain(normalizedError({ code: 'EPERM', message: 'denied', source: 'fs.read' }), ctx);
 * // 'DIAGNOSTIC: Permission issue detected. Check file ownership. ...\ntool: fs.read\ncode: EPERM\n...'
 * ```
 */
export const debuggingGuide: Guide = defineGuide({
  id: 'debugging',
  description: 'Failures are diagnostic data: EPERM means "permission issue detected, check file ownership".',

  systemPrompt(agent, tools) {
    return basePrompt(
      agent,
      {
        role: 'You are a methodical OpenStarry agent: you work toward a goal by calling tools, and you debug like an engineer.',
        failures:
          'It is a diagnostic report (code, source, message, arguments). Form a hypothesis from it, ' +
          'then test it with one small call.',
      },
      tools,
    );
  },

  interpretPain(error, ctx) {
    return lines(
      `DIAGNOSTIC: ${diagnosis(error)}`,
      `tool: ${ctx.toolName}`,
      `code: ${error.code}`,
      `source: ${error.source}`,
      `message: ${error.message}`,
      error.suggestion ? `suggestion: ${error.suggestion}` : undefined,
      `args: ${formatArgs(ctx.args)}`,
      `tick: ${ctx.tick}, consecutive failures: ${ctx.consecutiveFailures}`,
      'Next: form a hypothesis from these data, then test it with one small call.',
    );
  },

  interpretAlert(alert) {
    switch (alert.kind) {
      case 'REPEAT_ALERT':
        return lines(
          REPEAT_ALERT_SENTENCE,
          `Observation: ${alert.toolName} with identical arguments (fingerprint ${alert.fingerprint}) failed ${countOf(alert.repeatCount, 'time')} in a row.`,
          'Identical inputs give identical failures. Change one variable before the next attempt.',
        );
      case 'FRUSTRATION':
        return lines(
          `SYSTEM INTERVENTION: ${countOf(alert.consecutiveFailures, 'consecutive failure')}.`,
          'The remaining tool calls of this turn were not executed.',
          'Stop the current path. Re-read the diagnostics above, find the common cause, and re-plan.',
        );
    }
  },
});
