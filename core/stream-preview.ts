/**
 * Large text on a live stream (docs/API.md#large-events): a stream event carries every string of its
 * data up to `PREVIEW_CHARS` characters, and says what it cut (`cut`: where in its data, and how long the
 * whole string is), so a stream's events stay small whatever a model or a tool wrote. The whole text stays
 * where it was: the task's transcript, its result. Pure.
 */

/** The longest string a stream event carries whole; a longer one is cut to this many characters. */
export const PREVIEW_CHARS = 8192;

/** A string an event cut: its place in the event's data (`text`, `toolCalls.0.args.content`) and its whole length. */
export interface CutText {
  path: string;
  chars: number;
}

/** Past this depth a value is passed on as it is: data this deep is not text a person reads. */
const MAX_DEPTH = 64;

/**
 * `data` with each string longer than `max` characters cut to its first `max` (never within a surrogate
 * pair), and the list of what was cut; `data` itself is not changed, and is returned as it is when
 * nothing was cut.
 *
 * ```ts
 * previewOf({ tick: 3, text: 'x'.repeat(10_000) }, 8192)
 * // { data: { tick: 3, text: 'xxx…' (8192) }, cut: [{ path: 'text', chars: 10000 }] }
 * ```
 */
export function previewOf<T>(data: T, max = PREVIEW_CHARS): { data: T; cut: CutText[] } {
  const cut: CutText[] = [];
  const walk = (value: unknown, path: string, depth: number): unknown => {
    if (typeof value === 'string') {
      if (value.length <= max) return value;
      cut.push({ path, chars: value.length });
      // A high surrogate at the end would be half a character.
      const end = /[\uD800-\uDBFF]/.test(value.charAt(max - 1)) ? max - 1 : max;
      return value.slice(0, end);
    }
    if (value === null || typeof value !== 'object' || depth >= MAX_DEPTH) return value;
    const at = (key: string | number) => (path ? `${path}.${key}` : String(key));
    if (Array.isArray(value)) {
      const out = value.map((v, i) => walk(v, at(i), depth + 1));
      return out.every((v, i) => v === value[i]) ? value : out;
    }
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = walk(v, at(k), depth + 1);
      changed ||= out[k] !== v;
    }
    return changed ? out : value;
  };
  return { data: walk(data, '', 0) as T, cut };
}
