import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ScriptSchema, scriptCache, stepFor } from './scripted';
import { parseLlmSpec } from '../../core/llm-spec';

const script = ScriptSchema.parse({
  turns: [
    { text: 'listing', toolCalls: [{ name: 'fs.list', args: {} }], usage: { inputTokens: 150, outputTokens: 300 } },
  ],
});
const req = {
  llm: parseLlmSpec('scripted:/tmp/turns.json'),
  callNumber: 1,
  messages: [{ role: 'user' as const, text: 'go' }],
};

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

  it('is parsed once while the file stays the same, and read again after any rewrite', async () => {
    const scripts = scriptCache();
    const same = new Date(1_700_000_002_000);
    write('cached', same);
    const first = await scripts.load(file);
    expect(first.turns[0]?.text).toBe('cached');
    expect(await scripts.load(file)).toBe(first); // the parsed script itself: not read again
    write('CACHED', same); // new content, same size, the modification time put back: its change time moved
    expect(await textOf(scripts)).toBe('CACHED');
    // Another file renamed over it, of the same size and modification time.
    const other = path.join(dir, 'other.json');
    writeFileSync(other, JSON.stringify({ turns: [{ text: 'OTHER!' }] }));
    utimesSync(other, same, same);
    renameSync(other, file);
    expect(await textOf(scripts)).toBe('OTHER!');
  });

  it('names the file when it cannot be read', async () => {
    await expect(scriptCache().load(path.join(dir, 'missing.json'))).rejects.toThrow(
      /cannot read the scripted controller file .*missing\.json: ENOENT/,
    );
  });
});

describe('the scripted controller reads only what the worker allows', () => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'starry-script-dirs-'));
  const allowed = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  mkdirSync(allowed);
  mkdirSync(outside);
  writeFileSync(path.join(allowed, 'turns.json'), JSON.stringify({ turns: [{ text: 'ok' }] }));
  // A worker policy file outside: a script path must not tell whether it exists, nor list its keys.
  writeFileSync(path.join(outside, 'policy.json'), JSON.stringify({ roots: ['/srv'], mcpEnv: ['GH_TOKEN'] }));
  writeFileSync(path.join(allowed, 'config.json'), JSON.stringify({ roots: ['/srv'], mcpEnv: ['GH_TOKEN'] }));
  symlinkSync(path.join(outside, 'policy.json'), path.join(allowed, 'link.json'));
  mkdirSync(path.join(allowed, 'sub'));
  symlinkSync(outside, path.join(allowed, 'sub', 'up'));
  const scripts = scriptCache({ dirs: [allowed] });
  const refusal = async (file: string): Promise<string> => {
    try {
      await scripts.load(file);
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error(`${file} was read`);
  };

  it('reads a script inside its directories', async () => {
    expect((await scripts.load(path.join(allowed, 'turns.json'))).turns).toEqual([{ text: 'ok' }]);
  });

  it('refuses a file outside with the same words whether it exists or not', async () => {
    const existing = await refusal(path.join(outside, 'policy.json'));
    const missing = await refusal(path.join(outside, 'nothing.json'));
    expect(existing).toBe(
      `the worker reads scripts only inside ${allowed}: '${path.join(outside, 'policy.json')}' is not one of them`,
    );
    expect(missing.replace('nothing.json', 'policy.json')).toBe(existing);
    for (const text of [existing, missing]) expect(text).not.toMatch(/roots|mcpEnv|ENOENT|exist/);
  });

  it('refuses a symlink inside that points outside, and a path through a symlinked directory', async () => {
    expect(await refusal(path.join(allowed, 'link.json'))).toMatch(/is not one of them/);
    expect(await refusal(path.join(allowed, 'sub', 'up', 'policy.json'))).toMatch(/is not one of them/);
    expect(await refusal(path.join(allowed, '..', 'outside', 'policy.json'))).toMatch(/is not one of them/);
  });

  it('does not serve a cached script once its path is a symlink to a file outside', async () => {
    const swapped = path.join(allowed, 'swapped.json');
    writeFileSync(swapped, JSON.stringify({ turns: [{ text: 'inside' }] }));
    expect((await scripts.load(swapped)).turns).toEqual([{ text: 'inside' }]);
    rmSync(swapped);
    symlinkSync(path.join(outside, 'policy.json'), swapped);
    expect(await refusal(swapped)).toMatch(/is not one of them/);
  });

  it('says a JSON file that is not a script is not one, without naming its keys', async () => {
    const text = await refusal(path.join(allowed, 'config.json'));
    expect(text).toMatch(/is not a script: a script is a JSON object with a "turns" list/);
    expect(text).not.toMatch(/roots|mcpEnv/);
  });
});
