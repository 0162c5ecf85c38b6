/**
 * Context strategy (seeds: Context Anchoring). The system prompt and the goal are anchored and never
 * trimmed; the rest is a sliding window over the latest messages, cut only where the provider message
 * order stays valid (a tool result is never separated from the assistant turn that asked for it).
 */
import type { ChatMessage } from './llm';

/**
 * Messages to send: the anchored head (system prompt, goal) plus at most `window` recent messages.
 *
 * ```ts
 * assembleContext({ messages, window: 40 })
 * ```
 */
export function assembleContext(opts: { messages: readonly ChatMessage[]; window: number; anchored?: number }): ChatMessage[] {
  const anchored = opts.anchored ?? 2;
  const head = opts.messages.slice(0, anchored);
  const rest = opts.messages.slice(anchored);
  if (rest.length <= opts.window) return [...head, ...rest];
  let start = rest.length - opts.window;
  // A window that opens on tool results would orphan them from their assistant turn: move past them.
  while (start < rest.length && rest[start]?.role === 'tool') start++;
  return [...head, ...rest.slice(start)];
}
