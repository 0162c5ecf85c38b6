/**
 * The texts of the `summarize` context strategy (core/context-strategy.ts): what the model is asked
 * when turns leave the window, and the message that stands for them in the context from then on.
 */
import type { ChatMessage, SummaryCovers } from './llm';

/** Tokens a summary may take at most (the budget may cap it lower). */
export const SUMMARY_MAX_TOKENS = 1024;
/** Characters of one message a summary request shows: a long tool result is cut, its gist is what counts. */
const MESSAGE_CHARS = 4000;
/** Characters of a summary the task's records keep (the whole summary is in the transcript store). */
export const SUMMARY_RECORD_CHARS = 2000;

/** The instruction of a summary call. */
export const SUMMARY_INSTRUCTION = [
  'You summarize the earlier part of an agent task so that the agent can continue without it.',
  'Keep every fact the agent still needs: what was tried, what worked, what failed and why, file names, values and decisions.',
  'Leave out what no longer matters. Write plain text, at most a few hundred words, no preamble.',
].join('\n');

/** One message as a summary request shows it. */
function line(m: ChatMessage): string {
  const cut = (text: string) => (text.length > MESSAGE_CHARS ? `${text.slice(0, MESSAGE_CHARS)}… [cut]` : text);
  if (m.role === 'tool') return `[result of ${m.name} ${m.callId}] ${cut(m.text)}`;
  const calls =
    m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => ` [calls ${c.name} ${JSON.stringify(c.args ?? {})}]`) : [];
  return `[${m.role}] ${cut(m.text ?? '')}${calls.join('')}`;
}

/**
 * The messages of a summary call: the instruction, then the earlier summary (when there is one) and the
 * turns to summarize, as text.
 *
 * ```ts
 * summaryRequest(undefined, [{ role: 'assistant', text: 'Reading.' }]) // [system, user]
 * ```
 */
export function summaryRequest(previous: string | undefined, turns: readonly ChatMessage[]): ChatMessage[] {
  const parts = [
    ...(previous ? ['The summary of what came before these turns:', previous, ''] : []),
    'The turns to summarize, oldest first:',
    ...turns.map(line),
  ];
  return [
    { role: 'system', text: SUMMARY_INSTRUCTION },
    { role: 'user', text: parts.join('\n') },
  ];
}

/**
 * The message that stands for the summarized turns in the context, right after the goal.
 *
 * ```ts
 * summaryMessage('Read notes.md.', { entries: [2, 40], calls: [1, 19] }).text // 'Summary of calls 1–19 …'
 * ```
 */
export function summaryMessage(text: string, covers: SummaryCovers): ChatMessage {
  const [from, to] = covers.calls;
  return {
    role: 'user',
    text: `Summary of calls ${from}–${to} of this task, which left the context window (the transcript keeps them whole):\n${text}`,
  };
}
