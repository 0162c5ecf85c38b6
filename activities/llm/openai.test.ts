import { CancelledFailure } from '@temporalio/common';
import type { LlmResponse } from '../../core/llm';
import { toolSpecs } from '../../core/tools';
import {
  openAiCompletion,
  openAiError,
  startFakeServer,
  type FakeReply,
  type FakeServer,
} from '../../test/helpers/fake-llm-server';
import {
  factsOf,
  failureOf,
  llmRequest as request,
  quietActivityEnv as activityEnv,
} from '../../test/helpers/llm-activity';
import { HEARTBEAT_EVERY_MS } from '../heartbeat';
import { createOpenAiProvider, fromOpenAiResponse, toOpenAiRequest, toolNameCodec } from './openai';
import { callLlm } from './provider';
import { providerMessage } from './provider-message';

describe('toolNameCodec', () => {
  it('maps dotted tool names to valid OpenAI function names and back', () => {
    const names = toolNameCodec(toolSpecs());
    expect(names.toWire('fs.read')).toBe('fs_read');
    expect(names.toWire('shell.run')).toBe('shell_run');
    expect(names.fromWire('fs_read')).toBe('fs.read');
    expect(names.fromWire('http_get')).toBe('http.get');
    for (const t of toolSpecs()) expect(names.toWire(t.name)).toMatch(/^[a-zA-Z0-9_-]+$/);
  });

  it('returns a name the model invented unchanged, so the workflow reports it as unknown', () => {
    expect(toolNameCodec(toolSpecs()).fromWire('rm_rf')).toBe('rm_rf');
  });

  it('refuses two tools that would share a wire name', () => {
    expect(() => toolNameCodec([{ name: 'fs.read' }, { name: 'fs_read' }])).toThrow(RangeError);
  });
});

describe('toOpenAiRequest', () => {
  it('maps every message kind, the tools and the output-token cap', () => {
    const body = toOpenAiRequest(
      request({
        messages: [
          { role: 'system', text: 'sys' },
          { role: 'user', text: 'goal' },
          {
            role: 'assistant',
            text: 'reading',
            toolCalls: [
              { id: 'c1', name: 'fs.read', args: { path: 'a' } },
              { id: 'c2', name: 'fs.list', rawArguments: '{not json' },
            ],
          },
          { role: 'tool', callId: 'c1', name: 'fs.read', text: 'content' },
          { role: 'tool', callId: 'c2', name: 'fs.list', text: 'pain' },
        ],
      }),
      { model: 'qwen', baseUrl: 'http://127.0.0.1:8000/v1' },
    );
    expect(body.model).toBe('qwen');
    expect(body.max_tokens).toBe(512);
    expect(body.max_completion_tokens).toBeUndefined();
    expect(body.messages).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'goal' },
      {
        role: 'assistant',
        content: 'reading',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'fs_read', arguments: '{"path":"a"}' } },
          { id: 'c2', type: 'function', function: { name: 'fs_list', arguments: '{not json' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'content' },
      { role: 'tool', tool_call_id: 'c2', content: 'pain' },
    ]);
    const read = body.tools?.find((t) => t.function.name === 'fs_read');
    expect(read).toMatchObject({
      type: 'function',
      function: { description: expect.any(String), parameters: { type: 'object' } },
    });
  });

  it('uses max_completion_tokens on api.openai.com, where reasoning models reject max_tokens', () => {
    const body = toOpenAiRequest(request(), { model: 'gpt-4o-mini', baseUrl: 'https://api.openai.com/v1' });
    expect(body.max_completion_tokens).toBe(512);
    expect(body.max_tokens).toBeUndefined();
  });
});

describe('fromOpenAiResponse', () => {
  const ctx = { tools: toolSpecs(), callNumber: 3, promptChars: 400 };

  it('reads text, tool calls with their original names, and usage', () => {
    const res = fromOpenAiResponse(
      openAiCompletion({
        toolCalls: [{ id: 'call_a', name: 'fs_read', arguments: '{"path":"notes.md"}' }],
        usage: { prompt: 120, completion: 7 },
      }),
      ctx,
    );
    expect(res).toEqual({
      toolCalls: [{ id: 'call_a', name: 'fs.read', args: { path: 'notes.md' } }],
      usage: { inputTokens: 120, outputTokens: 7 },
    });
    expect(fromOpenAiResponse(openAiCompletion({ text: 'Done.', usage: { prompt: 1, completion: 1 } }), ctx).text).toBe(
      'Done.',
    );
  });

  it('keeps arguments that are not JSON as rawArguments, and reads empty or object arguments as objects', () => {
    const body = openAiCompletion({
      toolCalls: [
        { id: 'x', name: 'fs_read', arguments: '{"path": "a"' },
        { id: 'y', name: 'fs_list', arguments: '' },
      ],
    }) as { choices: Array<{ message: { tool_calls: Array<{ function: { arguments: unknown } }> } }> };
    body.choices[0]!.message.tool_calls.push({
      id: 'z',
      function: { name: 'fs_list', arguments: { path: 'b' } },
    } as never);
    const res = fromOpenAiResponse(body, ctx);
    expect(res.toolCalls).toEqual([
      { id: 'x', name: 'fs.read', rawArguments: '{"path": "a"' },
      { id: 'y', name: 'fs.list', args: {} },
      { id: 'z', name: 'fs.list', args: { path: 'b' } },
    ]);
  });

  it('reads the cached part of the prompt from prompt_tokens_details.cached_tokens', () => {
    const res = fromOpenAiResponse(
      openAiCompletion({ text: 'Done.', usage: { prompt: 2048, completion: 7, cached: 1024 } }),
      ctx,
    );
    expect(res.usage).toEqual({ inputTokens: 2048, outputTokens: 7, cachedInputTokens: 1024 });
  });

  it('numbers tool calls that come without an id, and estimates usage a server left out', () => {
    const body = {
      choices: [{ message: { content: null, tool_calls: [{ function: { name: 'fs_list', arguments: '{}' } }] } }],
    };
    const res = fromOpenAiResponse(body, ctx);
    expect(res.toolCalls[0]?.id).toBe('call-3-1');
    expect(res.usage.inputTokens).toBe(100);
    expect(res.usage.outputTokens).toBeGreaterThan(0);
  });

  it('throws on a body without a choice', () => {
    expect(() => fromOpenAiResponse({ object: 'error' }, ctx)).toThrow(/choices/);
  });
});

describe('providerMessage', () => {
  it('reads OpenAI, Vertex, vLLM and plain-text error bodies', () => {
    expect(providerMessage('{"error":{"message":"Incorrect API key"}}', 401)).toBe('Incorrect API key');
    expect(providerMessage('{"error":{"code":429,"message":"Quota","status":"RESOURCE_EXHAUSTED"}}', 429)).toBe(
      'RESOURCE_EXHAUSTED: Quota',
    );
    expect(providerMessage('{"object":"error","message":"context too long","code":400}', 400)).toBe('context too long');
    expect(providerMessage('Bad Gateway\n', 502)).toBe('Bad Gateway');
    expect(providerMessage('', 503)).toBe('the server answered 503 without a message');
  });
});

describe('the OpenAI provider against a local chat completions server', () => {
  let server: FakeServer;
  let reply: (index: number) => FakeReply;
  beforeAll(async () => {
    server = await startFakeServer((_req, i) => reply(i));
  });
  afterAll(() => server.close());
  beforeEach(() => server.requests.splice(0));

  const target = () => ({ provider: 'openai' as const, model: 'fake', baseUrl: `${server.url}/v1` });
  // The worker's own endpoint is the fake server's, so its key goes there.
  const run = (opts: Parameters<typeof createOpenAiProvider>[0], env = activityEnv()): Promise<LlmResponse> =>
    env.run(() => callLlm(createOpenAiProvider({ baseUrl: `${server.url}/v1`, ...opts }), request(), target()));

  it("never sends the worker's key to a base URL other than its own", async () => {
    reply = () => ({ json: openAiCompletion({ text: 'hi', usage: { prompt: 1, completion: 1 } }) });
    await activityEnv().run(() =>
      callLlm(createOpenAiProvider({ apiKey: 'sk-secret', baseUrl: 'https://api.openai.com/v1' }), request(), target()),
    );
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(server.requests[0])).not.toContain('sk-secret');
  });

  it("calls the worker's own endpoint, with its key, for openai:MODEL", async () => {
    reply = () => ({ json: openAiCompletion({ text: 'hi', usage: { prompt: 1, completion: 1 } }) });
    await activityEnv().run(() =>
      callLlm(
        createOpenAiProvider({ env: { OPENAI_API_KEY: 'sk-own', OPENAI_BASE_URL: `${server.url}/v1/` } }),
        request(),
        { provider: 'openai', model: 'fake' },
      ),
    );
    expect(server.requests[0]).toMatchObject({
      path: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-own' },
    });
  });

  it('does not follow a redirect: a fatal error naming where it pointed', async () => {
    reply = () => ({ status: 307, headers: { location: 'http://169.254.169.254/latest' }, json: {} });
    const f = await failureOf(run({ apiKey: 'k' }));
    expect(f.nonRetryable).toBe(true);
    expect(factsOf(f)).toMatchObject({ code: 'EINVAL', kind: 'fatal' });
    expect(factsOf(f).message).toMatch(
      /answered 307, a redirect to http:\/\/169\.254\.169\.254\/latest; LLM calls do not follow redirects/,
    );
    expect(server.requests).toHaveLength(1);
  });

  it('posts to /v1/chat/completions with the bearer key and returns the mapped answer', async () => {
    // Answered after two heartbeat intervals, so the call heartbeats while it waits.
    reply = () => ({
      json: openAiCompletion({
        toolCalls: [{ id: 'call_1', name: 'fs_read', arguments: '{"path":"notes.md"}' }],
        usage: { prompt: 50, completion: 5 },
      }),
      delayMs: 2 * HEARTBEAT_EVERY_MS,
    });
    const env = activityEnv();
    const beats: unknown[] = [];
    env.on('heartbeat', (d) => beats.push(d));
    const res = await run({ apiKey: 'sk-test' }, env);
    expect(res.toolCalls).toEqual([{ id: 'call_1', name: 'fs.read', args: { path: 'notes.md' } }]);
    expect(res.usage).toEqual({ inputTokens: 50, outputTokens: 5 });
    expect(server.requests).toHaveLength(1);
    const [seen] = server.requests;
    expect(seen).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-test' },
    });
    expect(seen?.body).toMatchObject({
      model: 'fake',
      max_tokens: 512,
      messages: [{ role: 'system' }, { role: 'user' }],
    });
    expect(beats.length).toBeGreaterThan(0);
  });

  it('sends no Authorization header when the worker has no key (a local server)', async () => {
    reply = () => ({ json: openAiCompletion({ text: 'hi', usage: { prompt: 1, completion: 1 } }) });
    await run({ env: {} });
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('reads the key from STARRY_OPENAI_API_KEY before OPENAI_API_KEY', async () => {
    reply = () => ({ json: openAiCompletion({ text: 'hi', usage: { prompt: 1, completion: 1 } }) });
    await run({ env: { OPENAI_API_KEY: 'sk-openai', STARRY_OPENAI_API_KEY: 'sk-starry' } });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-starry');
  });

  it('turns 429 with Retry-After into a retryable failure whose next delay is the server’s', async () => {
    reply = () => openAiError(429, 'Rate limit reached', { 'retry-after': '2' });
    const f = await failureOf(run({ apiKey: 'k' }));
    expect(f.nonRetryable).toBe(false);
    expect(f.type).toBe('E_RATE_LIMIT');
    expect(f.nextRetryDelay).toBe(2000);
    expect(factsOf(f)).toMatchObject({
      kind: 'transient',
      source: 'llm openai',
      message: 'HTTP 429: Rate limit reached',
    });
  });

  it('reads retry-after-ms too', async () => {
    reply = () => openAiError(503, 'overloaded', { 'retry-after-ms': '150' });
    const f = await failureOf(run({ apiKey: 'k' }));
    expect(f).toMatchObject({ type: 'E_UNAVAILABLE', nonRetryable: false, nextRetryDelay: 150 });
  });

  it('makes 401 fatal and says which credential was rejected', async () => {
    reply = () => openAiError(401, 'Incorrect API key provided: sk-wrong.');
    const f = await failureOf(run({ env: { OPENAI_API_KEY: 'sk-wrong' } }));
    expect(f.nonRetryable).toBe(true);
    expect(factsOf(f)).toMatchObject({ code: 'E_AUTH', kind: 'fatal' });
    expect(factsOf(f).message).toContain('the API key in OPENAI_API_KEY was rejected');
  });

  it('makes 400 a non-retried failure with the provider’s message', async () => {
    reply = () => openAiError(400, "This model's maximum context length is 8192 tokens.");
    const f = await failureOf(run({ apiKey: 'k' }));
    expect(f.nonRetryable).toBe(true);
    expect(factsOf(f)).toMatchObject({
      code: 'EINVAL',
      kind: 'execution',
      message: "HTTP 400: This model's maximum context length is 8192 tokens.",
    });
  });

  it('treats a 200 that is not a chat completion as transient', async () => {
    reply = () => ({ json: { hello: 'proxy' } });
    const f = await failureOf(run({ apiKey: 'k' }));
    expect(f).toMatchObject({ type: 'E_UNAVAILABLE', nonRetryable: false });
  });

  it('surfaces a cancellation as the activity’s cancellation and aborts the request', async () => {
    reply = () => ({ json: openAiCompletion({ text: 'too late' }), delayMs: 30_000 });
    const env = activityEnv();
    const p = env.run(() => callLlm(createOpenAiProvider({ apiKey: 'k' }), request(), target()));
    await server.waitForRequests(1);
    env.cancel();
    await expect(p).rejects.toBeInstanceOf(CancelledFailure);
    await server.waitForAbort(0);
  });
});

describe('the OpenAI provider without a server', () => {
  it('reports a refused connection as a transient network error', async () => {
    const down = await startFakeServer(() => ({ json: {} }));
    const baseUrl = `${down.url}/v1`;
    await down.close();
    const f = await failureOf(
      activityEnv().run(() =>
        callLlm(createOpenAiProvider({ apiKey: 'k' }), request(), { provider: 'openai', model: 'm', baseUrl }),
      ),
    );
    expect(f).toMatchObject({ type: 'ECONNREFUSED', nonRetryable: false });
    expect(factsOf(f).message).toContain(new URL(baseUrl).origin);
  });

  it('rejects a base URL that is not http(s) without retrying', async () => {
    const f = await failureOf(
      activityEnv().run(() =>
        callLlm(createOpenAiProvider({}), request(), { provider: 'openai', model: 'm', baseUrl: 'ftp://x' }),
      ),
    );
    expect(f).toMatchObject({ type: 'EINVAL', nonRetryable: true });
  });
});
