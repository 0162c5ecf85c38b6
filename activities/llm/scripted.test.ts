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
