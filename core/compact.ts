/**
 * Bounding what an agent carries: the results it keeps in its state (and so through continue-as-new)
 * have every long string cut, so fifty results stay far below Temporal's 2 MB payload limit whatever
 * the tools wrote. The full transcript stays in the task workflow's own result and history.
 */
import type { TaskResult } from './contract';
import { LIMITS } from './payload-limits';

/**
 * A string cut to `max` characters, with a note that says how much was left out.
 *
 * ```ts
 * cut('x'.repeat(5000), 2000) // 'xxx…[3000 more characters left out]'
 * ```
 */
export function cut(text: string, max: number = LIMITS.keptStringChars): string {
  return text.length <= max ? text : `${text.slice(0, max)}…[${text.length - max} more characters left out]`;
}

/** Every string inside a plain JSON value cut to `max` characters. */
export function cutStrings(value: unknown, max: number = LIMITS.keptStringChars): unknown {
  if (typeof value === 'string') return cut(value, max);
  if (Array.isArray(value)) return value.map((v) => cutStrings(v, max));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, cutStrings(v, max)]),
    );
  }
  return value;
}

/** Bytes of a value as UTF-8 JSON (what Temporal's payload converter stores). */
export function jsonBytes(value: unknown): number {
  const json = JSON.stringify(value) ?? '';
  let bytes = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    // Surrogate pairs count 2 + 2 = 4 bytes, as UTF-8 encodes them.
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdfff ? 2 : 3;
  }
  return bytes;
}

/**
 * The result made to fit in `maxBytes` of JSON: long strings cut (2,000, then 500, then 100
 * characters), then the oldest tool calls and injections left out, counted in `omitted`. Nothing an
 * agent or a task returns can then reach Temporal's payload limit, however much its tools wrote.
 *
 * ```ts
 * const kept = fitResult(result, LIMITS.keptResultBytes);
 * ```
 */
export function fitResult(result: TaskResult, maxBytes: number): TaskResult {
  if (jsonBytes(result) <= maxBytes) return result;
  for (const chars of [LIMITS.keptStringChars, 500]) {
    const r = compactResult(result, chars);
    if (jsonBytes(r) <= maxBytes) return r;
  }
  let r = compactResult(result, 100);
  const all = { toolCalls: r.toolCalls, injections: r.injections };
  let keep = Math.max(all.toolCalls.length, all.injections.length);
  while (jsonBytes(r) > maxBytes && keep > 0) {
    keep = Math.floor(keep / 2);
    const toolCalls = all.toolCalls.slice(all.toolCalls.length - Math.min(keep, all.toolCalls.length));
    const injections = all.injections.slice(all.injections.length - Math.min(keep, all.injections.length));
    const omitted = {
      toolCalls: (result.omitted?.toolCalls ?? 0) + all.toolCalls.length - toolCalls.length,
      injections: (result.omitted?.injections ?? 0) + all.injections.length - injections.length,
    };
    r = { ...r, toolCalls, injections, omitted };
  }
  return r;
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
