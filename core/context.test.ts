import { assembleContext, calibrate, entryBytes, estimateTokens, resultChars, windowStart } from './context';
import type { ChatMessage, TranscriptEntry } from './llm';

const system: ChatMessage = { role: 'system', text: 'system prompt' };
const goal: ChatMessage = { role: 'user', text: 'the goal' };

function turn(i: number): ChatMessage[] {
  return [
    { role: 'assistant', toolCalls: [{ id: `c${i}`, name: 'fs.list', args: {} }] },
    { role: 'tool', callId: `c${i}`, name: 'fs.list', text: `result ${i}` },
  ];
}

describe('assembleContext', () => {
  it('keeps everything when the conversation fits the window', () => {
    const messages = [system, goal, ...turn(1)];
    expect(assembleContext({ messages, window: 10 })).toEqual(messages);
  });

  it('never trims the system prompt or the goal', () => {
    const messages = [system, goal, ...Array.from({ length: 30 }, (_, i) => turn(i)).flat()];
    const ctx = assembleContext({ messages, window: 4 });
    expect(ctx.slice(0, 2)).toEqual([system, goal]);
    expect(ctx).toHaveLength(6);
    expect(ctx.at(-1)).toEqual({ role: 'tool', callId: 'c29', name: 'fs.list', text: 'result 29' });
  });

  it('does not open the window on an orphaned tool result', () => {
    const messages = [system, goal, ...turn(1), ...turn(2)];
    const ctx = assembleContext({ messages, window: 3 });
    expect(ctx[2]?.role).toBe('assistant');
    expect(ctx).toHaveLength(4);
  });
});

describe('the token-aware window', () => {
  const stored = (role: 'assistant' | 'tool', bytes: number, ref = 'r'): TranscriptEntry => ({ role, ref, bytes });
  /** A head of 2 entries, then `n` turns of an assistant message and a tool result of `bytes` each. */
  function transcript(n: number, bytes: number): TranscriptEntry[] {
    return [
      system,
      goal,
      ...Array.from({ length: n }, (_, i) => [
        stored('assistant', 200, `a${i}`),
        stored('tool', bytes, `t${i}`),
      ]).flat(),
    ];
  }
  const limits = { maxMessages: 40, maxTokens: 64_000, bytesPerToken: 4 };

  it('opens where the message window would when the tokens do not bind', () => {
    const entries = transcript(30, 1000);
    expect(windowStart(entries, limits)).toBe(entries.length - 40);
    expect(windowStart(transcript(3, 1000), limits)).toBe(2);
  });

  it('keeps only the newest turns that fit the tokens, never opening on a tool result', () => {
    // Each turn is 50 + 2,500 tokens; 10,000 tokens less the head hold 3 turns.
    const entries = transcript(10, 10_000);
    const start = windowStart(entries, { ...limits, maxTokens: 10_000 });
    expect(entries.length - start).toBe(6);
    expect(entries[start]?.role).toBe('assistant');
  });

  it('always sends the newest turn whole, however large', () => {
    const entries = transcript(3, 1_000_000);
    expect(windowStart(entries, { ...limits, maxTokens: 1000 })).toBe(entries.length - 2);
  });

  it('counts tokens at the calibrated ratio: the same bytes fit twice as well at 8 bytes a token', () => {
    const entries = transcript(20, 4000);
    const at4 = windowStart(entries, { ...limits, maxTokens: 10_000 });
    const at8 = windowStart(entries, { ...limits, maxTokens: 10_000, bytesPerToken: 8 });
    expect(entries.length - at8).toBeGreaterThan(entries.length - at4);
  });

  it('calibrates bytes per token from what was sent and what the provider counted, within 1..6', () => {
    expect(calibrate(36_000, 10_000, 4)).toBe(3.6);
    expect(calibrate(36_000, 0, 4)).toBe(4);
    expect(calibrate(100, 10_000, 4)).toBe(1);
    expect(calibrate(1e9, 10, 4)).toBe(6);
  });

  it('lets a turn’s tool results fill half the room the head leaves together, each between 500 and the cap', () => {
    const head = [system, goal];
    expect(resultChars(head, limits, 16_000)).toBe(16_000);
    const small = resultChars(head, { ...limits, maxTokens: 4000 }, 16_000);
    expect(small).toBeLessThan(16_000);
    expect(small).toBe(Math.floor((4000 - head.reduce((n, m) => n + estimateTokens(entryBytes(m), 4), 0)) * 0.5 * 4));
    expect(resultChars(head, { ...limits, maxTokens: 10 }, 16_000)).toBe(500);
    // A turn's results share the room: 100 calls get a hundredth each.
    expect(resultChars(head, limits, 16_000, 100)).toBe(Math.floor(resultChars(head, limits, 1e9) / 100));
  });
});
