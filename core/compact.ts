/**
 * Bounding what an agent carries: the results it keeps in its state (and so through continue-as-new)
 * have every long string cut, so fifty results stay far below Temporal's 2 MB payload limit whatever
 * the tools wrote. The full transcript stays in the task workflow's own result and history.
 */
import { LIMITS, type TaskResult } from './contract';

/**
 * A string cut to `max` characters, with a note that says how much was left out.
 *
 * ```ts
 * cut('x'.repeat(5000), 2000) // 'xxx…[3000 more characters: see the task workflow's result]'
 * ```
 */
export function cut(text: string, max: number = LIMITS.keptStringChars): string {
  return text.length <= max ? text : `${text.slice(0, max)}…[${text.length - max} more characters: see the task workflow's result]`;
}

/** Every string inside a plain JSON value cut to `max` characters. */
export function cutStrings(value: unknown, max: number = LIMITS.keptStringChars): unknown {
  if (typeof value === 'string') return cut(value, max);
  if (Array.isArray(value)) return value.map((v) => cutStrings(v, max));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, cutStrings(v, max)]));
  }
  return value;
}

/**
 * The result as the agent keeps it: the same fields, long strings cut.
 *
 * ```ts
 * agent.tasks.push(compactResult(result));
 * ```
 */
export function compactResult(result: TaskResult, max: number = LIMITS.keptStringChars): TaskResult {
  return cutStrings(result, max) as TaskResult;
}
