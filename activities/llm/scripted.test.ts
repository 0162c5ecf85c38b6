import { ScriptSchema, stepFor } from './scripted';

const script = ScriptSchema.parse({
  turns: [{ text: 'listing', toolCalls: [{ name: 'fs.list', args: {} }], usage: { inputTokens: 150, outputTokens: 300 } }],
});
const req = { llm: 'scripted:/tmp/turns.json', callNumber: 1, messages: [{ role: 'user' as const, text: 'go' }] };

describe('the scripted controller’s usage', () => {
  it('reports the stated usage when the call allows it', () => {
    const step = stepFor(script, { ...req, maxOutputTokens: 8192 }, 1);
    expect(step.kind === 'answer' && step.response.usage).toEqual({ inputTokens: 150, outputTokens: 300 });
  });

  it('never reports more output tokens than the call’s maxOutputTokens, as a real provider would not', () => {
    const step = stepFor(script, { ...req, maxOutputTokens: 100 }, 1);
    expect(step.kind === 'answer' && step.response.usage).toEqual({ inputTokens: 150, outputTokens: 100 });
  });
});

describe('the scripted controller and the verification step', () => {
  const final = ScriptSchema.parse({ turns: [{ text: 'The answer is 42.' }] });

  it('stands by its final answer when asked to verify it, without a turn for that', () => {
    const messages = [
      { role: 'user' as const, text: 'goal' },
      { role: 'assistant' as const, text: 'The answer is 42.' },
      { role: 'user' as const, text: 'Before you finish: check your answer against the goal.' },
    ];
    const step = stepFor(final, { ...req, callNumber: 2, messages }, 1);
    expect(step.kind === 'answer' && step.response).toMatchObject({ text: 'The answer is 42.', toolCalls: [] });
  });

  it('still says a script ran out of turns when the last answer was a tool call', () => {
    const messages = [
      { role: 'assistant' as const, toolCalls: [{ id: 'c1', name: 'fs.list', args: {} }] },
      { role: 'tool' as const, callId: 'c1', name: 'fs.list', text: '[]' },
    ];
    const step = stepFor(final, { ...req, callNumber: 2, messages }, 1);
    expect(step.kind === 'fail' && step.error.message).toMatch(/has 1 turn\(s\); LLM call #2 has none/);
  });
});
