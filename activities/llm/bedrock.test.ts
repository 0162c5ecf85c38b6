import { CancelledFailure } from '@temporalio/common';
import { toolSpecs } from '../../core/tools';
import {
  bedrockError,
  bedrockModelOf,
  bedrockResponse,
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
import { createBedrockProvider, fromBedrockResponse, resolveBedrockSetup, toBedrockRequest } from './bedrock';
import { callLlm } from './provider';

const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const spec = { provider: 'bedrock' as const, model: MODEL };

describe('toBedrockRequest', () => {
  it('maps the system prompt, the turns, tool calls and results (pain as status error), the tools and the output cap', () => {
    const input = toBedrockRequest(
      request({
        messages: [
          { role: 'system', text: 'sys' },
          { role: 'user', text: 'goal' },
          {
            role: 'assistant',
            text: 'reading',
            toolCalls: [
              { id: 'tooluse_1', name: 'fs.read', args: { path: 'a' } },
              { id: 'tooluse_2', name: 'fs.list', args: {} },
            ],
          },
          { role: 'tool', callId: 'tooluse_1', name: 'fs.read', text: 'content' },
          { role: 'tool', callId: 'tooluse_2', name: 'fs.list', text: '【System Pain Alert】 ENOENT', isError: true },
          { role: 'user', text: 'VERIFY: check your work' },
        ],
      }),
      MODEL,
    );
    expect(input.modelId).toBe(MODEL);
    expect(input.system).toEqual([{ text: 'sys' }]);
    expect(input.inferenceConfig).toEqual({ maxTokens: 512 });
    // Converse wants user and assistant in turn: the results and the next user text are one user turn.
    expect(input.messages).toEqual([
      { role: 'user', content: [{ text: 'goal' }] },
      {
        role: 'assistant',
        content: [
          { text: 'reading' },
          { toolUse: { toolUseId: 'tooluse_1', name: 'fs_read', input: { path: 'a' } } },
          { toolUse: { toolUseId: 'tooluse_2', name: 'fs_list', input: {} } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'tooluse_1', content: [{ text: 'content' }], status: 'success' } },
          {
            toolResult: {
              toolUseId: 'tooluse_2',
              content: [{ text: '【System Pain Alert】 ENOENT' }],
              status: 'error',
            },
          },
          { text: 'VERIFY: check your work' },
        ],
      },
    ]);
    const read = input.toolConfig?.tools?.find((t) => t.toolSpec?.name === 'fs_read');
    expect(read?.toolSpec).toEqual({
      name: 'fs_read',
      description: 'Read a text file inside the workspace.',
      inputSchema: { json: toolSpecs().find((t) => t.name === 'fs.read')?.parameters },
    });
    expect(input.toolConfig?.tools?.map((t) => t.toolSpec?.name)).toEqual(
      toolSpecs().map((t) => t.name.replace('.', '_')),
    );
  });

  it('leaves out blank texts (Converse refuses them) and toolConfig when there is no tool', () => {
    const input = toBedrockRequest(
      request({
        tools: [],
        messages: [
          { role: 'user', text: 'goal' },
          { role: 'assistant', text: '' },
          { role: 'user', text: 'again' },
        ],
      }),
      MODEL,
    );
    expect(input.messages).toEqual([{ role: 'user', content: [{ text: 'goal' }, { text: 'again' }] }]);
    expect(input).not.toHaveProperty('toolConfig');
    expect(input).not.toHaveProperty('system');
  });
});

describe('fromBedrockResponse', () => {
  const ctx = { tools: toolSpecs(), callNumber: 3 };

  it('reads text and toolUse blocks, mapping tool names back, and counts cache reads and writes as input', () => {
    const answer = fromBedrockResponse(
      bedrockResponse({
        content: [
          { text: 'Reading ' },
          { text: 'both.' },
          { toolUse: { toolUseId: 'tooluse_a', name: 'fs_read', input: { path: 'notes.md' } } },
          { toolUse: { name: 'shell_run', input: { command: 'ls' } } },
        ],
        stopReason: 'tool_use',
        usage: { input: 100, output: 20, cacheRead: 900, cacheWrite: 50 },
      }) as never,
      ctx,
    );
    expect(answer).toEqual({
      ok: true,
      response: {
        text: 'Reading both.',
        toolCalls: [
          { id: 'tooluse_a', name: 'fs.read', args: { path: 'notes.md' } },
          { id: 'call-3-2', name: 'shell.run', args: { command: 'ls' } },
        ],
        usage: { inputTokens: 1050, outputTokens: 20, cachedInputTokens: 900 },
      },
    });
  });

  it('keeps an answer cut at max_tokens, and fails one that has no content for another reason', () => {
    const cut = fromBedrockResponse(
      bedrockResponse({
        content: [{ text: 'half an ans' }],
        stopReason: 'max_tokens',
        usage: { input: 5, output: 8 },
      }) as never,
      ctx,
    );
    expect(cut).toEqual({
      ok: true,
      response: { text: 'half an ans', toolCalls: [], usage: { inputTokens: 5, outputTokens: 8 } },
    });
    const filtered = fromBedrockResponse(
      bedrockResponse({ content: [], stopReason: 'content_filtered', usage: { input: 5, output: 0 } }) as never,
      ctx,
    );
    expect(filtered).toMatchObject({
      ok: false,
      error: { code: 'EINVAL', kind: 'execution', message: 'Bedrock stopped with content_filtered and no content' },
    });
  });
});

describe('resolveBedrockSetup', () => {
  it('takes the region from AWS_REGION, else AWS_DEFAULT_REGION, and the Bedrock endpoint before the general one', () => {
    expect(resolveBedrockSetup({ env: { AWS_REGION: 'eu-west-3', AWS_DEFAULT_REGION: 'us-east-1' } })).toEqual({
      ok: true,
      region: 'eu-west-3',
    });
    expect(
      resolveBedrockSetup({
        env: {
          AWS_DEFAULT_REGION: 'us-west-2',
          AWS_ENDPOINT_URL: 'http://127.0.0.1:4566',
          AWS_ENDPOINT_URL_BEDROCK_RUNTIME: 'https://vpce-1.bedrock-runtime.us-west-2.vpce.amazonaws.com',
        },
      }),
    ).toEqual({
      ok: true,
      region: 'us-west-2',
      endpoint: 'https://vpce-1.bedrock-runtime.us-west-2.vpce.amazonaws.com',
    });
  });

  it('says what to set when there is no region, and the preflight names the spec', () => {
    expect(resolveBedrockSetup({ env: {} })).toMatchObject({
      ok: false,
      message: expect.stringContaining('AWS_REGION'),
    });
    expect(createBedrockProvider({ env: {} }).preflight(spec)).toMatch(
      /^--llm bedrock:anthropic\.claude-3-5-haiku-20241022-v1:0: Bedrock needs a region: set AWS_REGION/,
    );
    expect(createBedrockProvider({ env: { AWS_REGION: 'us-east-1' } }).preflight(spec)).toBeUndefined();
  });
});

describe('the Bedrock provider against a local Converse server, through the AWS SDK', () => {
  let server: FakeServer;
  let reply: (index: number) => FakeReply;
  const saved = { ...process.env };
  beforeAll(async () => {
    server = await startFakeServer((_req, i) => reply(i), { http2: true });
    // Static credentials for the SDK's default chain, as a worker's environment would hold them.
    process.env.AWS_ACCESS_KEY_ID = 'AKIDSTARRYTEST';
    process.env.AWS_SECRET_ACCESS_KEY = 'starry-test-secret';
  });
  afterAll(async () => {
    process.env = saved;
    await server.close();
  });
  beforeEach(() => server.requests.splice(0));

  const provider = () =>
    createBedrockProvider({ env: { AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_BEDROCK_RUNTIME: server.url } });
  const run = () => activityEnv().run(() => callLlm(provider(), request({ llm: spec }), spec));

  it('signs the Converse call with SigV4 for bedrock, posts the mapped request and returns the mapped answer', async () => {
    reply = () => ({
      json: bedrockResponse({
        content: [{ toolUse: { toolUseId: 'tooluse_1', name: 'fs_read', input: { path: 'notes.md' } } }],
        stopReason: 'tool_use',
        usage: { input: 50, output: 5, cacheRead: 30 },
      }),
    });
    const res = await run();
    expect(res).toEqual({
      toolCalls: [{ id: 'tooluse_1', name: 'fs.read', args: { path: 'notes.md' } }],
      usage: { inputTokens: 80, outputTokens: 5, cachedInputTokens: 30 },
    });
    expect(server.requests).toHaveLength(1);
    const [seen] = server.requests;
    expect(seen?.method).toBe('POST');
    expect(bedrockModelOf(seen?.path ?? '')).toBe(MODEL);
    expect(seen?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDSTARRYTEST\/\d{8}\/us-east-1\/bedrock\/aws4_request, SignedHeaders=\S+, Signature=[0-9a-f]{64}$/,
    );
    expect(seen?.body).toEqual(
      JSON.parse(JSON.stringify({ ...toBedrockRequest(request(), MODEL), modelId: undefined })),
    );
  });

  it.each([
    [429, 'ThrottlingException', 'E_RATE_LIMIT', 'Too many requests, please wait before trying again.'],
    [503, 'ServiceUnavailableException', 'E_UNAVAILABLE', 'Bedrock is unable to process your request.'],
    [500, 'InternalServerException', 'E_UNAVAILABLE', 'The server encountered an internal error.'],
    [429, 'ModelNotReadyException', 'E_UNAVAILABLE', 'Model is not ready for inference.'],
  ])(
    'makes %s %s retryable as %s, with one request per attempt (the SDK retries nothing)',
    async (status, type, code, message) => {
      reply = () => bedrockError(status, type, message);
      const f = await failureOf(run());
      expect(f).toMatchObject({ type: code, nonRetryable: false });
      expect(factsOf(f)).toMatchObject({ kind: 'transient', source: 'llm bedrock' });
      expect(factsOf(f).message).toContain(`${type}: ${message}`);
      expect(server.requests).toHaveLength(1);
    },
  );

  it('makes a 502 with a proxy’s page retryable', async () => {
    reply = () => ({ status: 502, text: '<html>Bad Gateway</html>' });
    const f = await failureOf(run());
    expect(f).toMatchObject({ type: 'E_UNAVAILABLE', nonRetryable: false });
  });

  it('makes AccessDeniedException fatal, naming the region, the console fix and the ARN to grant', async () => {
    reply = () =>
      bedrockError(403, 'AccessDeniedException', "You don't have access to the model with the specified model ID.");
    const f = await failureOf(run());
    expect(f).toMatchObject({ type: 'E_AUTH', nonRetryable: true });
    expect(factsOf(f)).toMatchObject({ kind: 'fatal' });
    expect(factsOf(f).message).toBe(
      `AccessDeniedException: You don't have access to the model with the specified model ID. (model ${MODEL} in us-east-1: ` +
        `enable access to ${MODEL} in the Bedrock console (Model access) for us-east-1, and let the worker's role call ` +
        `bedrock:InvokeModel on arn:aws:bedrock:us-east-1::foundation-model/${MODEL})`,
    );
  });

  it('makes a refused credential fatal, naming the chain it came from', async () => {
    reply = () =>
      bedrockError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
    const f = await failureOf(run());
    expect(f).toMatchObject({ type: 'E_AUTH', nonRetryable: true });
    expect(factsOf(f).message).toMatch(/AWS refused the worker's credentials \(from the AWS SDK default chain: /);
  });

  it('makes ResourceNotFoundException fatal with how to find a valid model id', async () => {
    reply = () => bedrockError(404, 'ResourceNotFoundException', 'Model not found.');
    const f = await failureOf(run());
    expect(f).toMatchObject({ type: 'ENOENT', nonRetryable: true });
    expect(factsOf(f)).toMatchObject({ kind: 'fatal' });
    expect(factsOf(f).message).toContain('aws bedrock list-foundation-models --region us-east-1');
  });

  it('makes ValidationException a failed call that is not retried, with Bedrock’s message', async () => {
    reply = () =>
      bedrockError(400, 'ValidationException', 'The model returned the following errors: messages.1: blank text');
    const f = await failureOf(run());
    expect(f).toMatchObject({ type: 'EINVAL', nonRetryable: true });
    expect(factsOf(f)).toMatchObject({
      kind: 'execution',
      message: `ValidationException: The model returned the following errors: messages.1: blank text (model ${MODEL} in us-east-1)`,
    });
  });

  it('surfaces a cancellation as the activity’s cancellation and aborts the request', async () => {
    reply = () => ({ json: bedrockResponse({ content: [{ text: 'too late' }] }), delayMs: 30_000 });
    const env = activityEnv();
    const p = env.run(() => callLlm(provider(), request({ llm: spec }), spec));
    await server.waitForRequests(1);
    env.cancel();
    await expect(p).rejects.toBeInstanceOf(CancelledFailure);
    await server.waitForAbort(0);
  });
});

describe('the Bedrock provider without credentials or region', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('fails fatally, naming the credential chain it tried, and sends nothing', async () => {
    const server = await startFakeServer(() => ({ json: bedrockResponse({ content: [{ text: 'hi' }] }) }), {
      http2: true,
    });
    for (const name of Object.keys(process.env))
      if (/^AWS_/.test(name) && name !== 'AWS_REGION') delete process.env[name];
    // Nothing for the chain to find: no files, no container or instance role.
    process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent/credentials';
    process.env.AWS_CONFIG_FILE = '/nonexistent/config';
    process.env.AWS_EC2_METADATA_DISABLED = 'true';
    try {
      const provider = createBedrockProvider({
        env: { AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_BEDROCK_RUNTIME: server.url },
      });
      const f = await failureOf(activityEnv().run(() => callLlm(provider, request({ llm: spec }), spec)));
      expect(f).toMatchObject({ type: 'E_AUTH', nonRetryable: true });
      expect(factsOf(f).message).toMatch(
        /^no AWS credentials on the worker for Bedrock \(.+\); tried the AWS SDK default chain: AWS_ACCESS_KEY_ID\/AWS_SECRET_ACCESS_KEY, SSO, /,
      );
      expect(server.requests).toHaveLength(0);
    } finally {
      await server.close();
    }
  });

  it('fails fatally without a region, saying what to set', async () => {
    const f = await failureOf(
      activityEnv().run(() => callLlm(createBedrockProvider({ env: {} }), request({ llm: spec }), spec)),
    );
    expect(f).toMatchObject({ type: 'E_AUTH', nonRetryable: true });
    expect(factsOf(f).message).toContain('set AWS_REGION (or AWS_DEFAULT_REGION) where the worker runs');
  });
});
