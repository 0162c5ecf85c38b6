import { PREVIEW_CHARS, previewOf } from './stream-preview';

describe('previewOf: large text on a stream', () => {
  it('cuts a string over the preview to its first characters and says where and how long it was', () => {
    const text = `${'a'.repeat(PREVIEW_CHARS)}the rest`;
    const { data, cut } = previewOf({ tick: 3, text });
    expect(data).toEqual({ tick: 3, text: 'a'.repeat(PREVIEW_CHARS) });
    expect(cut).toEqual([{ path: 'text', chars: PREVIEW_CHARS + 8 }]);
  });

  it('finds long strings anywhere in the data, by their path', () => {
    const long = 'x'.repeat(20);
    const { data, cut } = previewOf(
      { toolCalls: [{ name: 'fs.write', args: { path: 'a.md', content: long } }], injected: ['ok', long] },
      10,
    );
    expect(data).toEqual({
      toolCalls: [{ name: 'fs.write', args: { path: 'a.md', content: 'x'.repeat(10) } }],
      injected: ['ok', 'x'.repeat(10)],
    });
    expect(cut).toEqual([
      { path: 'toolCalls.0.args.content', chars: 20 },
      { path: 'injected.1', chars: 20 },
    ]);
  });

  it('returns the data itself, unchanged, when nothing is over the preview', () => {
    const small = { tick: 1, toolCalls: [{ name: 'fs.read', args: { path: 'a' } }], usage: { inputTokens: 3 } };
    const r = previewOf(small);
    expect(r.data).toBe(small);
    expect(r.cut).toEqual([]);
  });

  it('leaves the data it was given as it was', () => {
    const given = { args: { content: 'y'.repeat(30) } };
    previewOf(given, 5);
    expect(given.args.content).toHaveLength(30);
  });

  it('never cuts within a surrogate pair', () => {
    const { data } = previewOf({ text: `abc${'😀'.repeat(5)}` }, 4);
    expect(data.text).toBe('abc');
  });
});
