import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ScriptSchema, scriptCache, stepFor } from './scripted';

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

describe('the scripted controller’s script file', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'starry-script-'));
  const file = path.join(dir, 'turns.json');
  const write = (text: string, mtime?: Date) => {
    writeFileSync(file, JSON.stringify({ turns: [{ text }] }));
    if (mtime) utimesSync(file, mtime, mtime);
  };
  const textOf = async (scripts: ReturnType<typeof scriptCache>) => (await scripts.load(file)).turns[0]?.text;

  it('is read again once it changes, so a rewritten script takes effect at the next call', async () => {
    const scripts = scriptCache();
    write('first', new Date(1_700_000_000_000));
    expect(await textOf(scripts)).toBe('first');
    write('second, longer', new Date(1_700_000_000_000));
    expect(await textOf(scripts)).toBe('second, longer');
    write('third, longer!', new Date(1_700_000_001_000)); // the same size, a later modification
    expect(await textOf(scripts)).toBe('third, longer!');
  });

  it('is parsed once while its size and modification time stay the same', async () => {
    const scripts = scriptCache();
    const same = new Date(1_700_000_002_000);
    write('cached', same);
    expect(await textOf(scripts)).toBe('cached');
    write('CACHED', same); // new content, same size, the modification time put back
    expect(await textOf(scripts)).toBe('cached');
  });

  it('names the file when it cannot be read', async () => {
    await expect(scriptCache().load(path.join(dir, 'missing.json'))).rejects.toThrow(/cannot read the scripted controller file .*missing\.json: ENOENT/);
  });
});
