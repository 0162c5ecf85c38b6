import { toolWorkerEnv } from './tool-worker';

describe('toolWorkerEnv', () => {
  it('is the environment without the LLM keys, with the extra variables', () => {
    const env = toolWorkerEnv(
      { PATH: '/bin', OPENAI_API_KEY: 'sk', STARRY_OPENAI_API_KEY: 's', GOOGLE_APPLICATION_CREDENTIALS: '/k.json' },
      { TEMPORAL_ADDRESS: '127.0.0.1:7233', GEMINI_API_KEY: 'g' },
    );
    expect(env).toEqual({ PATH: '/bin', TEMPORAL_ADDRESS: '127.0.0.1:7233' });
  });
});
