/**
 * Context strategy (seeds: Context Anchoring). The system prompt and the goal are anchored and never
 * trimmed; the rest is a sliding window over the latest messages, cut only where the provider message
 * order stays valid (a tool result is never separated from the assistant turn that asked for it).
 *
 * The window is measured in tokens of the target model (`contextTokens`) as well as in messages
 * (`contextWindow`). Tokens are estimated from bytes, calibrated by the provider's own count: after each
 * call, the bytes sent over the input tokens the provider reported is the next estimate's ratio.
 */
import { jsonBytes } from './compact';
import { isStored, type ChatMessage, type TranscriptEntry } from './llm';

/** Bytes per token before the provider has counted any (English and JSON run at 3–4). */
export const DEFAULT_BYTES_PER_TOKEN = 4;
/** The most bytes per token a calibration may conclude. */
const MAX_BYTES_PER_TOKEN = 6;
/** A turn's tool results may fill at most this share of the window's room after the anchored head. */
const RESULT_SHARE = 0.5;
/** Characters a tool result keeps at least, however small the window. */
const MIN_RESULT_CHARS = 500;

/**
 * Messages to send: the anchored head (system prompt, goal) plus at most `window` recent messages.
 *
 * ```ts
 * assembleContext({ messages, window: 40 })
 * ```
 */
export function assembleContext<M extends { role: ChatMessage['role'] }>(opts: {
  messages: readonly M[];
  window: number;
  anchored?: number;
}): M[] {
  const anchored = opts.anchored ?? 2;
  const head = opts.messages.slice(0, anchored);
  const rest = opts.messages.slice(anchored);
  if (rest.length <= opts.window) return [...head, ...rest];
  let start = rest.length - opts.window;
  // A window that opens on tool results would orphan them from their assistant turn: move past them.
  while (start < rest.length && rest[start]?.role === 'tool') start++;
  return [...head, ...rest.slice(start)];
}

/** Bytes of a transcript entry: a stored one knows its size, an inline one is measured. */
export function entryBytes(m: TranscriptEntry): number {
  return isStored(m) ? m.bytes : jsonBytes(m);
}

/** Estimated tokens of `bytes` at the calibrated ratio. */
export function estimateTokens(bytes: number, bytesPerToken: number): number {
  return Math.ceil(bytes / bytesPerToken);
}

/** Estimated tokens of some entries (the anchored head, say) at the calibrated ratio. */
export function entriesTokens(entries: readonly TranscriptEntry[], bytesPerToken: number): number {
  return entries.reduce((n, m) => n + estimateTokens(entryBytes(m), bytesPerToken), 0);
}

/**
 * The next estimate's ratio from what a call sent and what the provider counted, kept in 1..6: real
 * tokenizers run at 1–5 bytes a token, and a provider that counts less than it was sent (a local model's
 * own estimate) must not let the window grow past what the model can take.
 */
export function calibrate(sentBytes: number, inputTokens: number, previous: number): number {
  if (!(sentBytes > 0 && inputTokens > 0)) return previous;
  return Math.min(MAX_BYTES_PER_TOKEN, Math.max(1, sentBytes / inputTokens));
}

export interface WindowLimits {
  /** Messages kept besides the anchored head (`contextWindow`). */
  maxMessages: number;
  /** Tokens of the whole context (`contextTokens`). */
  maxTokens: number;
  bytesPerToken: number;
  /** Entries anchored at the start: system prompt, goal. */
  anchored?: number;
}

/**
 * Where the window opens: the index of the oldest entry after the anchored head that the next call
 * sends. The head always goes; the newest turn (the last assistant message and what followed it) always
 * goes whole; older entries go newest first while they fit the messages and the tokens left.
 *
 * ```ts
 * const start = windowStart(entries, { maxMessages: 40, maxTokens: 64_000, bytesPerToken: 4 });
 * const context = [...entries.slice(0, 2), ...entries.slice(start)];
 * ```
 */
export function windowStart(entries: readonly TranscriptEntry[], limits: WindowLimits): number {
  const anchored = limits.anchored ?? 2;
  const tokens = (m: TranscriptEntry) => estimateTokens(entryBytes(m), limits.bytesPerToken);
  let room = limits.maxTokens - entriesTokens(entries.slice(0, anchored), limits.bytesPerToken);
  let lastAssistant = entries.length;
  for (let i = entries.length - 1; i >= anchored; i--) {
    if (entries[i]?.role === 'assistant') {
      lastAssistant = i;
      break;
    }
  }
  let start = entries.length;
  while (start > anchored) {
    const m = entries[start - 1] as TranscriptEntry;
    const t = tokens(m);
    const newestTurn = start - 1 >= lastAssistant;
    if (!newestTurn && (entries.length - start + 1 > limits.maxMessages || t > room)) break;
    room -= t;
    start--;
  }
  // A window that opens on tool results would orphan them from their assistant turn: move past them.
  while (start < entries.length && entries[start]?.role === 'tool') start++;
  return start;
}

/**
 * Characters one tool result may keep in a window of these limits, when its turn made `calls` calls:
 * the turn's results share half of the room the anchored head leaves (the newest turn always goes
 * whole, so its results must fit together), never more than `cap` (MAX_RESULT_CHARS) each and never
 * less than 500.
 *
 * ```ts
 * resultChars(head, { maxMessages: 40, maxTokens: 4_000, bytesPerToken: 4 }, 16_000) // 6_000 with a 1,000-token head
 * ```
 */
export function resultChars(head: readonly TranscriptEntry[], limits: WindowLimits, cap: number, calls = 1): number {
  const room = Math.max(0, limits.maxTokens - entriesTokens(head, limits.bytesPerToken));
  return Math.max(
    MIN_RESULT_CHARS,
    Math.min(cap, Math.floor((room * RESULT_SHARE * limits.bytesPerToken) / Math.max(1, calls))),
  );
}
