import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseLlmSpec } from '../../core/llm-spec';
import { parseWorkerPolicy } from '../../core/worker-policy';
import { openAiCompletion, startFakeServer, type FakeServer } from '../../test/helpers/fake-llm-server';
import { factsOf, failureOf, llmRequest, quietActivityEnv } from '../../test/helpers/llm-activity';
import { localDirStore } from '../store/local';
import { transcriptStore } from '../transcript';
import { createLlmActivities, llmSetupProblem } from './index';

describe('llmSetupProblem', () => {
  it('says what Gemini on Vertex AI is missing', () => {
    expect(llmSetupProblem(parseLlmSpec('gemini:gemini-2.5-flash'), { gemini: { env: {} } })).toMatch(
      /^--llm gemini:gemini-2.5-flash: .*GOOGLE_CLOUD_PROJECT/,
    );
    expect(
      llmSetupProblem(parseLlmSpec('gemini:gemini-2.5-flash'), { gemini: { env: { GOOGLE_CLOUD_PROJECT: 'p' } } }),
    ).toBeUndefined();
  });

  it('says Bedrock needs a region, and takes the default region too', () => {
    const spec = parseLlmSpec('bedrock:amazon.nova-lite-v1:0');
    expect(llmSetupProblem(spec, { bedrock: { env: {} } })).toMatch(
      /^--llm bedrock:amazon\.nova-lite-v1:0: .*AWS_REGION/,
    );
    expect(llmSetupProblem(spec, { bedrock: { env: { AWS_DEFAULT_REGION: 'eu-central-1' } } })).toBeUndefined();
  });

  it('refuses an OpenAI base URL that does not parse', () => {
    // The scheme itself is checked by parseLlmSpec; this is what only a URL parser sees.
    expect(llmSetupProblem(parseLlmSpec('openai:m@http://bad host:8000/v1'), { openai: { env: {} } })).toMatch(
      /not a URL/,
    );
  });

  it('asks for a key on api.openai.com but not on a local server', () => {
    expect(
      llmSetupProblem(parseLlmSpec('openai:gpt-4o-mini@https://api.openai.com/v1'), { openai: { env: {} } }),
    ).toMatch(/OPENAI_API_KEY/);
    expect(
      llmSetupProblem(parseLlmSpec('openai:gpt-4o-mini@https://api.openai.com/v1'), {
        openai: { env: { OPENAI_API_KEY: 'sk' } },
      }),
    ).toBeUndefined();
    expect(
      llmSetupProblem(parseLlmSpec('openai:qwen@http://127.0.0.1:8000/v1'), { openai: { env: {} } }),
    ).toBeUndefined();
  });
});

describe('the llm activity applies the worker policy at every call', () => {
  let listener: FakeServer;
  beforeAll(async () => {
    listener = await startFakeServer(() => ({ json: openAiCompletion({ text: 'pwned' }) }));
  });
  afterAll(() => listener.close());

  const transcripts = transcriptStore(localDirStore(mkdtempSync(path.join(os.tmpdir(), 'starry-blobs-'))));
  const policy = parseWorkerPolicy({ roots: ['/srv/ws'], llmAllow: ['api.openai.com'] });
  const activities = createLlmActivities({ openai: { apiKey: 'sk-worker' } }, transcripts, policy);

  it('refuses an endpoint outside llmAllow as a fatal error, and the endpoint hears nothing', async () => {
    const f = await failureOf(
      quietActivityEnv().run(() => activities.llm(llmRequest({ llm: parseLlmSpec(`openai:gpt@${listener.url}/v1`) }))),
    );
    expect(f.nonRetryable).toBe(true);
    expect(factsOf(f)).toMatchObject({ code: 'EPERM', kind: 'fatal', source: 'llm openai' });
    expect(factsOf(f).message).toMatch(
      /^Refused by the worker's policy: llm: the host of 'http:\/\/127\.0\.0\.1:\d+\/v1' is not one/,
    );
    expect(listener.requests).toHaveLength(0);
  });

  it('refuses a script outside the roots and llmDirs without reading it', async () => {
    const f = await failureOf(
      quietActivityEnv().run(() => activities.llm(llmRequest({ llm: parseLlmSpec('scripted:/etc/passwd') }))),
    );
    expect(factsOf(f)).toMatchObject({ code: 'EPERM', kind: 'fatal', source: 'llm scripted' });
    expect(factsOf(f).message).not.toMatch(/root:/);
  });
});
