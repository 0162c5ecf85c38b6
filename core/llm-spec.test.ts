import { parseLlmSpec, llmLabel } from './llm-spec';

describe('parseLlmSpec', () => {
  it('parses each provider form', () => {
    expect(parseLlmSpec('scripted:/tmp/t.json')).toEqual({ provider: 'scripted', file: '/tmp/t.json' });
    expect(parseLlmSpec('gemini:gemini-2.5-flash')).toEqual({ provider: 'gemini', model: 'gemini-2.5-flash' });
    expect(parseLlmSpec('openai:qwen@http://127.0.0.1:8080/v1')).toEqual({
      provider: 'openai',
      model: 'qwen',
      baseUrl: 'http://127.0.0.1:8080/v1',
    });
    expect(parseLlmSpec('local:/m/smol.gguf')).toEqual({ provider: 'local', modelPath: '/m/smol.gguf' });
  });

  it('rejects an unknown provider naming the accepted forms', () => {
    expect(() => parseLlmSpec('claude:x')).toThrow(/unknown provider "claude".*scripted:FILE, gemini:MODEL/);
  });

  it('rejects incomplete specs', () => {
    expect(() => parseLlmSpec('scripted:')).toThrow(/needs a file/);
    expect(() => parseLlmSpec('openai:')).toThrow(/MODEL or MODEL@BASE_URL/);
    expect(() => parseLlmSpec('openai:model@')).toThrow(/MODEL or MODEL@BASE_URL/);
    expect(() => parseLlmSpec('openai:model@localhost:8080')).toThrow(/must start with http/);
    expect(() => parseLlmSpec('local:model.bin')).toThrow(/\.gguf/);
  });

  it("takes an OpenAI model without a base URL as the worker's own endpoint", () => {
    expect(parseLlmSpec('openai:gpt-4o-mini')).toEqual({ provider: 'openai', model: 'gpt-4o-mini' });
  });

  it('refuses a Gemini model name that could reach another path of the provider', () => {
    expect(parseLlmSpec('gemini:publishers/google/models/gemini-2.5-flash')).toEqual({
      provider: 'gemini',
      model: 'publishers/google/models/gemini-2.5-flash',
    });
    for (const model of ['../../v1/projects/p', 'a/../b', 'x?key=1', 'x#y', 'a b', 'x%2F..', '/abs']) {
      expect(() => parseLlmSpec(`gemini:${model}`)).toThrow(/no "\.\." segment/);
    }
  });

  it('labels a spec briefly for activity summaries', () => {
    expect(llmLabel(parseLlmSpec('scripted:/a/b/turns.json'))).toBe('scripted turns.json');
  });
});
