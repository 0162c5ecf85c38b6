/**
 * Fixed texts the loop writes into the context besides the guide's: tool results, skipped calls, the
 * verification step, and the retry history of a transient failure that ran out of attempts.
 */
import type { RetryConfig } from './config';
import type { NormalizedError } from './errors';

/** Tool results longer than this are cut in the context (the tool itself caps what it returns). */
export const MAX_RESULT_CHARS = 16_000;

/**
 * A successful tool result as the LLM sees it, cut to `maxChars`. A result cut to fit a small context
 * window says how much was left out and how to get the rest; the fixed cap keeps its original note, so
 * what models receive did not change.
 *
 * ```ts
 * toolResultText({ entries: [] }) // '{"entries":[]}'
 * ```
 */
export function toolResultText(data: unknown, maxChars: number = MAX_RESULT_CHARS): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data ?? null);
  if (text.length <= maxChars) return text;
  if (maxChars >= MAX_RESULT_CHARS)
    return `${text.slice(0, MAX_RESULT_CHARS)}… [cut at ${MAX_RESULT_CHARS} characters]`;
  const left = text.length - maxChars;
  return `${text.slice(0, maxChars)}… [cut to fit the context window: ${left} of ${text.length} characters left out. Ask for a smaller part to read the rest, e.g. fs.read with maxBytes, or a command that prints only the lines you need]`;
}

/** The tool result of a call that was not executed. */
export function skippedText(reason: string): string {
  return `${SKIPPED_PREFIX}${reason}.`;
}

/** How the result of a call that never ran begins (a reader tells it from pain by this). */
export const SKIPPED_PREFIX = 'Not executed: ';

/** The seeds' verification step: asked once before a final answer is accepted. */
export function verifyText(goal: string): string {
  return [
    'VERIFY: before this task is closed, check your work against the goal:',
    goal,
    'Use tools to confirm the result if you can. When it is verified, give your final answer again, with no tool call.',
  ].join('\n');
}

/**
 * What the retries of a transient failure were, for the `suggestion` of the pain it becomes.
 *
 * ```ts
 * retryHistory(error, retry, true) // 'Retried 5 times with exponential backoff (1s, x2, max 30s); still ECONNRESET: …'
 * ```
 */
export function retryHistory(error: NormalizedError, retry: RetryConfig, exhausted: boolean): string {
  const policy = `exponential backoff (${retry.initialIntervalMs / 1000}s, x${retry.backoffCoefficient}, max ${retry.maximumIntervalMs / 1000}s)`;
  const tries = exhausted ? `Tried ${retry.maximumAttempts} times with ${policy}` : `Gave up retrying (${policy})`;
  return `${tries}; still ${error.code}: ${error.message}. The resource looks unavailable: try a different approach, or finish without it.`;
}

/**
 * A turn's alerts with FRUSTRATION first, the others in the order they were raised: the seeds inject
 * the frustration intervention before anything else, even when an earlier call of the turn raised a
 * REPEAT_ALERT.
 *
 * ```ts
 * frustrationFirst([{ kind: 'REPEAT_ALERT' }, { kind: 'FRUSTRATION' }]) // [{ kind: 'FRUSTRATION' }, { kind: 'REPEAT_ALERT' }]
 * ```
 */
export function frustrationFirst<T extends { kind: string }>(alerts: readonly T[]): T[] {
  return [...alerts.filter((a) => a.kind === 'FRUSTRATION'), ...alerts.filter((a) => a.kind !== 'FRUSTRATION')];
}
