import { assembleContext } from './context';
import type { ChatMessage } from './llm';

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
