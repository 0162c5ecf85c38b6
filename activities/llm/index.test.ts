import { parseLlmSpec } from '../../core/llm-spec';
import { llmSetupProblem } from './index';

describe('llmSetupProblem', () => {
  it('says what Gemini on Vertex AI is missing', () => {
    expect(llmSetupProblem(parseLlmSpec('gemini:gemini-2.5-flash'), { gemini: { env: {} } })).toMatch(/^--llm gemini:gemini-2.5-flash: .*GOOGLE_CLOUD_PROJECT/);
    expect(llmSetupProblem(parseLlmSpec('gemini:gemini-2.5-flash'), { gemini: { env: { GOOGLE_CLOUD_PROJECT: 'p' } } })).toBeUndefined();
  });

  it('refuses an OpenAI base URL that does not parse', () => {
    // The scheme itself is checked by parseLlmSpec; this is what only a URL parser sees.
    expect(llmSetupProblem(parseLlmSpec('openai:m@http://bad host:8000/v1'), { openai: { env: {} } })).toMatch(/not a URL/);
  });

  it('asks for a key on api.openai.com but not on a local server', () => {
    expect(llmSetupProblem(parseLlmSpec('openai:gpt-4o-mini@https://api.openai.com/v1'), { openai: { env: {} } })).toMatch(/OPENAI_API_KEY/);
    expect(llmSetupProblem(parseLlmSpec('openai:gpt-4o-mini@https://api.openai.com/v1'), { openai: { env: { OPENAI_API_KEY: 'sk' } } })).toBeUndefined();
    expect(llmSetupProblem(parseLlmSpec('openai:qwen@http://127.0.0.1:8000/v1'), { openai: { env: {} } })).toBeUndefined();
  });
});
