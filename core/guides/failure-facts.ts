/**
 * The facts of a failure, stated once so every guide carries the same ones (the seeds' "Separation of Fact
 * and Meaning": the Core's facts stay intact, a guide only adds meaning around them).
 */
import type { NormalizedError } from '../errors';
import type { PainContext } from './guide';

/**
 * The seeds' repeat alert, verbatim. Every guide's REPEAT_ALERT text contains it, so the behaviour the seeds
 * describe does not depend on which guide an agent runs.
 *
 * ```ts
 * neutralGuide.interpretAlert(alert, ctx) === REPEAT_ALERT_SENTENCE // true
 * ```
 */
export const REPEAT_ALERT_SENTENCE = 'SYSTEM ALERT: You are repeating a failed action. STOP and analyze why.';

/**
 * `CODE: message`, without doubling the code when the message already starts with it (Node's own
 * messages do: "EPERM: operation not permitted, …").
 *
 * ```ts
 * codeAndMessage({ ...error, code: 'EPERM', message: 'EPERM: denied' }) // 'EPERM: denied'
 * ```
 */
export function codeAndMessage(error: Pick<NormalizedError, 'code' | 'message'>): string {
  return error.message.startsWith(`${error.code}:`) ? error.message : `${error.code}: ${error.message}`;
}

/**
 * One factual sentence about a failed call: tool, code, message and source.
 *
 * ```ts
 * describeFailure(normalizedError({ code: 'EPERM', message: 'denied', source: 'fs.read' }), ctx)
 * // 'Tool fs.read failed: EPERM: denied (source fs.read).'
 * ```
 */
export function describeFailure(error: NormalizedError, ctx: Pick<PainContext, 'toolName'>): string {
  // A skipped call never ran, so "failed" would misstate what happened.
  const verb = error.code === 'E_SKIPPED' || error.code === 'E_DENIED' ? 'was not executed' : 'failed';
  return `Tool ${ctx.toolName} ${verb}: ${codeAndMessage(error)} (source ${error.source}).`;
}

/**
 * The Core's suggestion as a `Suggestion: ...` line, or `undefined` when there is none.
 *
 * ```ts
 * suggestionLine({ ...error, suggestion: 'Use /w' }) // 'Suggestion: Use /w'
 * ```
 */
export function suggestionLine(error: NormalizedError): string | undefined {
  return error.suggestion === undefined || error.suggestion === '' ? undefined : `Suggestion: ${error.suggestion}`;
}

/**
 * A count with its noun in the right number, for alert texts whose thresholds are configurable down to 1.
 *
 * ```ts
 * countOf(1, 'failed tool call') // '1 failed tool call'
 * countOf(5, 'failed tool call') // '5 failed tool calls'
 * ```
 */
export function countOf(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** Join lines, dropping absent ones, so optional facts leave no blank gaps. */
export function lines(...parts: ReadonlyArray<string | undefined>): string {
  return parts.filter((p): p is string => p !== undefined).join('\n');
}
