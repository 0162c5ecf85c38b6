import { formatLlmSpec, llmSpecSchema, parseLlmSpec, llmLabel } from './llm-spec';

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

  it('takes a Bedrock model id, inference profile id or ARN whole, colons included, and gives it back', () => {
    for (const model of [
      'anthropic.claude-3-5-haiku-20241022-v1:0',
      'amazon.nova-lite-v1:0',
      'us.anthropic.claude-sonnet-4-20250514-v1:0',
      'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0',
    ]) {
      const spec = parseLlmSpec(`bedrock:${model}`);
      expect(spec).toEqual({ provider: 'bedrock', model });
      expect(formatLlmSpec(spec)).toBe(`bedrock:${model}`);
      expect(llmSpecSchema().parse(spec)).toEqual(spec);
    }
    expect(llmLabel(parseLlmSpec('bedrock:amazon.nova-lite-v1:0'))).toBe('bedrock amazon.nova-lite-v1:0');
  });

  it('refuses a Bedrock spec without a model id, or with characters no model id has', () => {
    expect(() => parseLlmSpec('bedrock:')).toThrow(/bedrock needs a model id, e\.g\. bedrock:amazon\.nova-lite-v1:0/);
    for (const model of ['a b', 'x?y', 'x#y', '-lead', 'model@us-east-1'])
      expect(() => parseLlmSpec(`bedrock:${model}`)).toThrow(/a Bedrock model id holds letters, digits/);
  });

  it('labels a spec briefly for activity summaries', () => {
    expect(llmLabel(parseLlmSpec('scripted:/a/b/turns.json'))).toBe('scripted turns.json');
  });
});
