import { CancelledFailure } from '@temporalio/common';
import type { LlmResponse } from '../../core/llm';
import { toolSpecs } from '../../core/tools';
import {
  geminiError,
  geminiResponse,
  startFakeServer,
  vertexModelOf,
  type FakeReply,
  type FakeServer,
} from '../../test/helpers/fake-llm-server';
import { factsOf, failureOf, llmRequest, quietActivityEnv } from '../../test/helpers/llm-activity';
import { HEARTBEAT_EVERY_MS } from '../heartbeat';
import { callLlm } from './provider';
import {
  createGeminiProvider,
  fromGeminiResponse,
  resolveGeminiSetup,
  toGeminiContents,
  toGeminiTools,
} from './gemini';
import { parseLlmSpec } from '../../core/llm-spec';

const request = (over: Parameters<typeof llmRequest>[0] = {}) =>
  llmRequest({ llm: parseLlmSpec('gemini:gemini-2.5-flash'), ...over });

describe('resolveGeminiSetup', () => {
  it('uses Application Default Credentials when a project is set, in the global location by default', () => {
    expect(resolveGeminiSetup({ env: { GOOGLE_CLOUD_PROJECT: 'proj' } })).toEqual({
      ok: true,
      client: { vertexai: true, project: 'proj', location: 'global' },
      credential: 'Application Default Credentials (project proj)',
      usesAdc: true,
    });
  });

  it('prefers the project to an API key from the environment, as the SDK does', () => {
    const setup = resolveGeminiSetup({
      env: { GOOGLE_CLOUD_PROJECT: 'proj', GOOGLE_CLOUD_LOCATION: 'europe-west4', GOOGLE_API_KEY: 'k' },
    });
    expect(setup).toMatchObject({ ok: true, usesAdc: true, client: { project: 'proj', location: 'europe-west4' } });
    expect(setup.ok && setup.client.apiKey).toBeFalsy();
  });

  it('uses a Vertex API key when no project is set, and says where it came from', () => {
    expect(resolveGeminiSetup({ env: { GEMINI_API_KEY: 'k' } })).toMatchObject({
      ok: true,
      client: { vertexai: true, apiKey: 'k' },
      credential: 'the Vertex AI API key in GEMINI_API_KEY',
    });
  });

  it('switches to the Gemini Developer API with GOOGLE_GENAI_USE_VERTEXAI=false', () => {
    expect(resolveGeminiSetup({ env: { GOOGLE_GENAI_USE_VERTEXAI: 'false', GEMINI_API_KEY: 'k' } })).toMatchObject({
      ok: true,
      client: { vertexai: false, apiKey: 'k' },
    });
    expect(resolveGeminiSetup({ env: { GOOGLE_GENAI_USE_VERTEXAI: 'false' } })).toMatchObject({
      ok: false,
      message: expect.stringContaining('GEMINI_API_KEY'),
    });
  });

  it('explains what to set when nothing is configured', () => {
    const setup = resolveGeminiSetup({ env: {} });
    expect(setup.ok).toBe(false);
    expect(!setup.ok && setup.message).toMatch(
      /GOOGLE_CLOUD_PROJECT.*gcloud auth application-default login.*GOOGLE_API_KEY/,
    );
  });

  it('takes a test base URL from STARRY_GEMINI_BASE_URL', () => {
    expect(
      resolveGeminiSetup({ env: { GOOGLE_API_KEY: 'k', STARRY_GEMINI_BASE_URL: 'http://127.0.0.1:9' } }),
    ).toMatchObject({ client: { baseUrl: 'http://127.0.0.1:9' } });
  });
});

describe('toGeminiTools', () => {
  it('declares every registry tool with its JSON Schema', () => {
    const [tool] = toGeminiTools(toolSpecs());
    expect(tool?.functionDeclarations?.map((d) => d.name)).toEqual(toolSpecs().map((t) => t.name));
    expect(tool?.functionDeclarations?.[0]).toMatchObject({
      name: 'fs.read',
      parametersJsonSchema: { type: 'object', required: ['path'] },
    });
    expect(toGeminiTools([])).toEqual([]);
  });
});

describe('toGeminiContents', () => {
  it('puts the system prompt in systemInstruction and replays the model’s parts unchanged', () => {
    const modelParts = [
      { text: 'thinking…', thought: true },
      { functionCall: { id: 'fc-1', name: 'fs.read', args: { path: 'a' } }, thoughtSignature: 'c2lnbmF0dXJl' },
      { functionCall: { name: 'fs.list', args: {} } },
    ];
    const { systemInstruction, contents } = toGeminiContents([
      { role: 'system', text: 'sys' },
      { role: 'user', text: 'goal' },
      {
        role: 'assistant',
        toolCalls: [
          { id: 'fc-1', name: 'fs.read', args: { path: 'a' } },
          { id: 'call-1-2', name: 'fs.list', args: {} },
        ],
        providerParts: modelParts,
      },
      { role: 'tool', callId: 'fc-1', name: 'fs.read', text: 'content' },
      { role: 'tool', callId: 'call-1-2', name: 'fs.list', text: 'listing' },
      { role: 'user', text: 'SYSTEM ALERT' },
    ]);
    expect(systemInstruction).toEqual({ parts: [{ text: 'sys' }] });
    expect(contents).toEqual([
      { role: 'user', parts: [{ text: 'goal' }] },
      { role: 'model', parts: modelParts },
      {
        role: 'user',
        parts: [
          { functionResponse: { id: 'fc-1', name: 'fs.read', response: { result: 'content' } } },
          // The id was ours, not the model's: it is not sent back.
          { functionResponse: { name: 'fs.list', response: { result: 'listing' } } },
        ],
      },
      { role: 'user', parts: [{ text: 'SYSTEM ALERT' }] },
    ]);
    expect(contents[1]?.parts).toBe(modelParts);
  });

  it('builds model parts from text and tool calls when no provider parts were kept', () => {
    const { contents } = toGeminiContents([
      { role: 'assistant', text: 'ok', toolCalls: [{ id: 'x', name: 'fs.read', args: { path: 'b' } }] },
    ]);
    expect(contents).toEqual([
      { role: 'model', parts: [{ text: 'ok' }, { functionCall: { name: 'fs.read', args: { path: 'b' } } }] },
    ]);
  });
});

describe('fromGeminiResponse', () => {
  it('reads the cached part of the prompt from cachedContentTokenCount', () => {
    const answer = fromGeminiResponse(
      geminiResponse({ parts: [{ text: 'Done.' }], usage: { prompt: 3000, candidates: 5, cached: 2048 } }) as never,
      { callNumber: 1 },
    );
    expect(answer.ok && answer.response.usage).toEqual({ inputTokens: 3000, outputTokens: 5, cachedInputTokens: 2048 });
  });

  it('reads text without thoughts, function calls, the parts and usage', () => {
    const parts = [
      { text: 'let me think', thought: true },
      { text: 'Reading it.' },
      { functionCall: { name: 'fs.read', args: { path: 'notes.md' } }, thoughtSignature: 'c2ln' },
    ];
    const answer = fromGeminiResponse(
      geminiResponse({ parts, usage: { prompt: 100, candidates: 20, thoughts: 30 } }) as never,
      { callNumber: 2 },
    );
    expect(answer).toEqual({
      ok: true,
      response: {
        text: 'Reading it.',
        toolCalls: [{ id: 'call-2-1', name: 'fs.read', args: { path: 'notes.md' } }],
        usage: { inputTokens: 100, outputTokens: 50 },
        providerParts: parts,
      },
    });
  });

  it('keeps the model’s own call ids', () => {
    const answer = fromGeminiResponse(
      geminiResponse({ parts: [{ functionCall: { id: 'abc', name: 'fs.list', args: {} } }] }) as never,
      { callNumber: 1 },
    );
    expect(answer.ok && answer.response.toolCalls[0]?.id).toBe('abc');
  });

  it('fails the call when the prompt was blocked or the model stopped without content', () => {
    const blocked = fromGeminiResponse({ promptFeedback: { blockReason: 'SAFETY' as never } }, { callNumber: 1 });
    expect(blocked).toMatchObject({
      ok: false,
      error: { code: 'EINVAL', kind: 'execution', message: expect.stringContaining('prompt blocked: SAFETY') },
    });
    const malformed = fromGeminiResponse(
      { candidates: [{ finishReason: 'MALFORMED_FUNCTION_CALL' as never, content: { role: 'model' } }] },
      { callNumber: 1 },
    );
    expect(malformed).toMatchObject({
      ok: false,
      error: { message: expect.stringContaining('MALFORMED_FUNCTION_CALL') },
    });
  });
});

describe('the Gemini provider against a local Vertex AI endpoint', () => {
  let server: FakeServer;
  let reply: (index: number) => FakeReply;
  beforeAll(async () => {
    server = await startFakeServer((_req, i) => reply(i));
  });
  afterAll(() => server.close());
  beforeEach(() => server.requests.splice(0));

  const provider = (over: Parameters<typeof createGeminiProvider>[0] = {}) =>
    createGeminiProvider({
      baseUrl: server.url,
      apiKey: 'test-key',
      project: 'proj',
      location: 'us-central1',
      env: {},
      ...over,
    });
  const run = (p = provider(), env = quietActivityEnv()): Promise<LlmResponse> =>
    env.run(() => callLlm(p, request(), { provider: 'gemini', model: 'gemini-2.5-flash' }));

  it('posts generateContent to the Vertex path with the key, the tools and the output cap', async () => {
    // Answered after two heartbeat intervals, so the call heartbeats while it waits.
    reply = () => ({
      json: geminiResponse({ parts: [{ text: 'Done.' }], usage: { prompt: 40, candidates: 2 } }),
      delayMs: 2 * HEARTBEAT_EVERY_MS,
    });
    const env = quietActivityEnv();
    const beats: unknown[] = [];
    env.on('heartbeat', (d) => beats.push(d));
    const res = await run(provider(), env);
    expect(res).toMatchObject({ text: 'Done.', toolCalls: [], usage: { inputTokens: 40, outputTokens: 2 } });
    const [seen] = server.requests;
    expect(seen?.path).toBe(
      '/v1beta1/projects/proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent',
    );
    expect(vertexModelOf(seen?.path ?? '')).toBe('gemini-2.5-flash');
    expect(seen?.headers['x-goog-api-key']).toBe('test-key');
    expect(seen?.body).toMatchObject({
      systemInstruction: { parts: [{ text: 'You are careful.' }] },
      contents: [{ role: 'user', parts: [{ text: 'Read notes.md' }] }],
      tools: [{ functionDeclarations: expect.arrayContaining([expect.objectContaining({ name: 'fs.read' })]) }],
      generationConfig: { maxOutputTokens: 512 },
    });
    expect(beats.length).toBeGreaterThan(0);
  });

  it('makes one request per call: the SDK’s own retries are off', async () => {
    reply = () => geminiError(503, 'The model is overloaded.');
    const f = await failureOf(run());
    expect(server.requests).toHaveLength(1);
    expect(f).toMatchObject({ type: 'E_UNAVAILABLE', nonRetryable: false });
    expect(factsOf(f).message).toBe('HTTP 503: UNAVAILABLE: The model is overloaded.');
  });

  it('turns 429 with Retry-After into a retryable failure whose next delay is the server’s', async () => {
    reply = () => geminiError(429, 'Resource exhausted.', { 'retry-after': '3' });
    const f = await failureOf(run());
    expect(f).toMatchObject({ type: 'E_RATE_LIMIT', nonRetryable: false, nextRetryDelay: 3000 });
  });

  it('makes 401 fatal and names the credential', async () => {
    reply = () => geminiError(401, 'Request had invalid authentication credentials.');
    const f = await failureOf(run());
    expect(f.nonRetryable).toBe(true);
    expect(factsOf(f)).toMatchObject({ code: 'E_AUTH', kind: 'fatal', source: 'llm gemini' });
    expect(factsOf(f).message).toContain('the Vertex AI API key configured on the worker was rejected');
    expect(factsOf(f).suggestion).toContain('GOOGLE_GENAI_USE_VERTEXAI=false');
  });

  it('treats Google’s 400 API_KEY_INVALID as a rejected credential, not as a bad request', async () => {
    reply = () => geminiError(400, 'API key not valid. Please pass a valid API key.', {}, 'API_KEY_INVALID');
    const f = await failureOf(run());
    expect(f).toMatchObject({ type: 'E_AUTH', nonRetryable: true });
    expect(factsOf(f).message).toBe(
      'HTTP 400: INVALID_ARGUMENT: API key not valid. Please pass a valid API key. (the Vertex AI API key configured on the worker was rejected)',
    );
  });

  it('makes 400 a non-retried failure with the provider’s message', async () => {
    reply = () => geminiError(400, 'Unable to submit request because it has an empty text parameter.');
    const f = await failureOf(run());
    expect(f).toMatchObject({ type: 'EINVAL', nonRetryable: true });
    expect(factsOf(f).message).toContain('empty text parameter');
  });

  it('surfaces a cancellation as the activity’s cancellation and aborts the request', async () => {
    reply = () => ({ json: geminiResponse({ parts: [{ text: 'too late' }] }), delayMs: 30_000 });
    const env = quietActivityEnv();
    const p = run(provider(), env);
    await server.waitForRequests(1);
    env.cancel();
    await expect(p).rejects.toBeInstanceOf(CancelledFailure);
    await server.waitForAbort(0);
  });

  it('fails fatally, before any request, when nothing is configured', async () => {
    const f = await failureOf(run(createGeminiProvider({ env: {} })));
    expect(f).toMatchObject({ type: 'E_AUTH', nonRetryable: true });
    expect(factsOf(f).message).toContain('GOOGLE_CLOUD_PROJECT');
    expect(server.requests).toHaveLength(0);
  });

  it('fails fatally, naming ADC, when Application Default Credentials cannot be loaded', async () => {
    const saved = process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.GOOGLE_APPLICATION_CREDENTIALS = '/nonexistent/starry-adc.json';
    try {
      const f = await failureOf(
        run(createGeminiProvider({ baseUrl: server.url, project: 'proj', location: 'us-central1', env: {} })),
      );
      expect(f).toMatchObject({ type: 'E_AUTH', nonRetryable: true });
      expect(factsOf(f).message).toContain('Application Default Credentials (project proj)');
      expect(factsOf(f).suggestion).toContain('gcloud auth application-default login');
      expect(server.requests).toHaveLength(0);
    } finally {
      if (saved === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
      else process.env.GOOGLE_APPLICATION_CREDENTIALS = saved;
    }
  });
});
