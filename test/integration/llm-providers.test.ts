/**
 * The cloud LLM providers through real workflows on a real server, each against a local server that
 * speaks its wire format — OpenAI's chat completions (`POST /v1/chat/completions`, also vLLM, llama.cpp,
 * Ollama), Vertex AI's REST API through `@google/genai`
 * (`POST /v1beta1/projects/P/locations/L/publishers/google/models/MODEL:generateContent`) and Bedrock's
 * Converse API through the AWS SDK (`POST /model/MODEL_ID/converse`, SigV4-signed, over HTTP/2). The
 * model name picks the server's behaviour, as a real server routes by model; the same behaviours are
 * asked of every provider, and each checks its own wire.
 */
import { parseAgentConfig, type AgentConfig, type AgentConfigInput } from '../../core/config';
import {
  bedrockError,
  bedrockModelOf,
  bedrockResponse,
  geminiError,
  geminiResponse,
  openAiCompletion,
  openAiError,
  startFakeServer,
  vertexModelOf,
  type FakeReply,
  type FakeRequest,
  type FakeServer,
  type WireBody,
} from '../helpers/fake-llm-server';
import { alertFor, makeWorkspace, startHarness, uniqueId, type Harness, type HarnessOptions } from '../helpers/harness';

type Usage = { prompt: number; completion: number };

/** What differs between providers: the wire, the credentials, the messages. */
interface Provider {
  name: 'openai' | 'gemini' | 'bedrock';
  /** The wire runs over HTTP/2 (the AWS SDK's Bedrock client). */
  http2?: boolean;
  /** The provider honours the server's Retry-After (Bedrock sends none). */
  retryAfter: boolean;
  /** The model a request asks for, or a reply refusing it (no route, a wrong key). */
  route(req: FakeRequest): string | FakeReply;
  modelOf(req: FakeRequest): string | undefined;
  reply(text: string, usage?: Usage): FakeReply;
  error(status: number, message: string, headers?: Record<string, string>): FakeReply;
  spec(model: string, url: string): string;
  /** The worker's provider settings: the good key, and a worker whose environment holds a wrong one. */
  workers(url: string): { good: HarnessOptions['activities']; wrongKey: HarnessOptions['activities'] };
  messages: { rateLimit: string; bad: string; badShown: string; wrongKey: string; notFound: (model: string) => string };
  /** The round trip: the model's two replies, the tokens they state, and what the provider must send. */
  roundtrip: {
    first: FakeReply;
    second: FakeReply;
    tokens: number;
    checkWire(first: WireBody, second: WireBody): void;
  };
  /** What else the 401 request shows (Vertex's express mode has no project in the path). */
  check401?(last: FakeRequest): void;
}

const notes = 'hello from the workspace';
const FINAL = `Done. The notes say: ${notes}.`;

const OPENAI_KEY = 'sk-good';
const openai: Provider = {
  name: 'openai',
  retryAfter: true,
  route(req) {
    if (req.path !== '/v1/chat/completions') return openAiError(404, `no route for ${req.path}`);
    if (req.headers.authorization !== `Bearer ${OPENAI_KEY}`)
      return openAiError(401, 'Incorrect API key provided: sk-wr***ey.');
    return req.body?.model;
  },
  modelOf: (req) => req.body?.model,
  reply: (text, usage) => ({ json: openAiCompletion({ text, ...(usage ? { usage } : {}) }) }),
  error: openAiError,
  spec: (model, url) => `openai:${model}@${url}/v1`,
  workers: (url) => ({
    // The key lives in the worker's environment (here: the env the provider reads), never in the task,
    // and belongs to the worker's own endpoint, which is the fake server's.
    good: { llm: { openai: { env: { STARRY_OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: `${url}/v1` } } } },
    wrongKey: { llm: { openai: { env: { OPENAI_API_KEY: 'sk-wrong-key', OPENAI_BASE_URL: `${url}/v1` } } } },
  }),
  messages: {
    rateLimit: 'Rate limit reached for requests',
    bad: "This model's maximum context length is 8192 tokens.",
    badShown: "This model's maximum context length is 8192 tokens.",
    wrongKey: 'the API key in OPENAI_API_KEY was rejected',
    notFound: (model) => `The model \`${model}\` does not exist.`,
  },
  roundtrip: {
    first: {
      json: openAiCompletion({
        toolCalls: [{ id: 'call_rt_1', name: 'fs_read', arguments: '{"path":"notes.md"}' }],
        usage: { prompt: 120, completion: 15 },
      }),
    },
    second: { json: openAiCompletion({ text: FINAL, usage: { prompt: 210, completion: 12 } }) },
    tokens: 120 + 15 + 210 + 12,
    checkWire(first, second) {
      expect(first.tools.map((t: { function: { name: string } }) => t.function.name)).toContain('fs_read');
      expect(first.max_tokens).toBeGreaterThan(0);
      // The second call carries the model's tool call and its result, linked by the call id.
      const messages = second.messages as WireBody[];
      expect(messages.at(-2)).toMatchObject({
        role: 'assistant',
        tool_calls: [
          { id: 'call_rt_1', type: 'function', function: { name: 'fs_read', arguments: '{"path":"notes.md"}' } },
        ],
      });
      expect(messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_rt_1' });
      expect(messages.at(-1)?.content).toContain(notes);
    },
  },
};

const VERTEX_KEY = 'vertex-good-key';
/** The model's first turn: a thought, then a function call carrying a thought signature. */
const ROUNDTRIP_PARTS = [
  { text: 'The user wants the notes; read the file.', thought: true },
  { functionCall: { name: 'fs.read', args: { path: 'notes.md' } }, thoughtSignature: 'Q2lRQmpNK3NpZ25hdHVyZQ==' },
];
const gemini: Provider = {
  name: 'gemini',
  retryAfter: true,
  route(req) {
    const model = vertexModelOf(req.path);
    if (req.method !== 'POST' || !model) return geminiError(404, `no route for ${req.method} ${req.path}`);
    if (req.headers['x-goog-api-key'] !== VERTEX_KEY) {
      return geminiError(
        401,
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      );
    }
    return model;
  },
  modelOf: (req) => vertexModelOf(req.path),
  reply: (text, usage) => ({
    json: geminiResponse({
      parts: [{ text }],
      ...(usage ? { usage: { prompt: usage.prompt, candidates: usage.completion } } : {}),
    }),
  }),
  error: geminiError,
  spec: (model) => `gemini:${model}`,
  workers: (url) => ({
    good: {
      llm: { gemini: { baseUrl: url, apiKey: VERTEX_KEY, project: 'starry-test', location: 'us-central1', env: {} } },
    },
    // A wrong Vertex API key in the worker's environment (express mode: no project).
    wrongKey: { llm: { gemini: { env: { GOOGLE_API_KEY: 'wrong-key', STARRY_GEMINI_BASE_URL: url } } } },
  }),
  messages: {
    rateLimit: 'Resource exhausted. Please try again later.',
    bad: 'Unable to submit request because it has an empty text parameter.',
    badShown: 'empty text parameter',
    wrongKey: 'the Vertex AI API key in GOOGLE_API_KEY was rejected',
    notFound: (model) => `Publisher Model \`${model}\` was not found.`,
  },
  roundtrip: {
    first: { json: geminiResponse({ parts: ROUNDTRIP_PARTS, usage: { prompt: 300, candidates: 18, thoughts: 40 } }) },
    second: { json: geminiResponse({ parts: [{ text: FINAL }], usage: { prompt: 420, candidates: 14 } }) },
    tokens: 300 + 18 + 40 + 420 + 14,
    checkWire(first, second) {
      expect(first.tools[0].functionDeclarations.map((d: { name: string }) => d.name)).toContain('fs.read');
      expect(first.generationConfig.maxOutputTokens).toBeGreaterThan(0);
      expect(first.systemInstruction.parts[0].text).toBeTruthy();
      // The model's parts go back unchanged, thought signature included; the result follows as the user's.
      const contents = second.contents as Array<{ role: string; parts: WireBody[] }>;
      expect(contents.at(-2)).toEqual({ role: 'model', parts: ROUNDTRIP_PARTS });
      expect(contents.at(-1)?.role).toBe('user');
      expect(contents.at(-1)?.parts).toEqual([
        { functionResponse: { name: 'fs.read', response: { result: expect.stringContaining(notes) } } },
      ]);
    },
  },
  check401: (last) => expect(last.path).toBe('/v1beta1/publishers/google/models/roundtrip:generateContent'),
};

// The worker's AWS credentials, as its environment holds them: the SDK's default chain reads them here.
process.env.AWS_ACCESS_KEY_ID = 'AKIDSTARRYGOOD';
process.env.AWS_SECRET_ACCESS_KEY = 'starry-good-secret';
const BEDROCK_ERRORS: Record<number, string> = {
  400: 'ValidationException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
};
const bedrock: Provider = {
  name: 'bedrock',
  http2: true,
  retryAfter: false,
  route(req) {
    const model = bedrockModelOf(req.path);
    if (req.method !== 'POST' || !model)
      return bedrockError(404, 'UnknownOperationException', `no route for ${req.method} ${req.path}`);
    // SigV4 with the worker's access key, for Bedrock in the worker's region.
    if (
      !/^AWS4-HMAC-SHA256 Credential=AKIDSTARRYGOOD\/\d{8}\/us-east-1\/bedrock\/aws4_request, /.test(
        req.headers.authorization ?? '',
      )
    )
      return bedrockError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
    return model;
  },
  modelOf: (req) => bedrockModelOf(req.path),
  reply: (text, usage) => ({
    json: bedrockResponse({
      content: [{ text }],
      ...(usage ? { usage: { input: usage.prompt, output: usage.completion } } : {}),
    }),
  }),
  error: (status, message) => bedrockError(status, BEDROCK_ERRORS[status] ?? 'InternalServerException', message),
  spec: (model) => `bedrock:${model}`,
  workers: (url) => {
    const env = { AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_BEDROCK_RUNTIME: url };
    return {
      good: { llm: { bedrock: { env } } },
      wrongKey: {
        llm: { bedrock: { env, credentials: { accessKeyId: 'AKIDWRONG', secretAccessKey: 'wrong-secret' } } },
      },
    };
  },
  messages: {
    rateLimit: 'Too many requests, please wait before trying again.',
    bad: 'The model returned the following errors: messages: text content blocks must be non-empty',
    badShown: 'text content blocks must be non-empty',
    wrongKey: "AWS refused the worker's credentials (from the credentials given to the provider)",
    notFound: () => 'The provided model identifier is invalid.',
  },
  roundtrip: {
    first: {
      json: bedrockResponse({
        content: [
          { text: 'I will read the notes.' },
          { toolUse: { toolUseId: 'tooluse_rt_1', name: 'fs_read', input: { path: 'notes.md' } } },
        ],
        stopReason: 'tool_use',
        usage: { input: 40, output: 15, cacheRead: 260, cacheWrite: 20 },
      }),
    },
    second: { json: bedrockResponse({ content: [{ text: FINAL }], usage: { input: 90, output: 12, cacheRead: 260 } }) },
    // The prompt cache's reads and writes are input, billed and counted.
    tokens: 40 + 260 + 20 + 15 + 90 + 260 + 12,
    checkWire(first, second) {
      expect(first.toolConfig.tools.map((t: { toolSpec: { name: string } }) => t.toolSpec.name)).toContain('fs_read');
      expect(first.inferenceConfig.maxTokens).toBeGreaterThan(0);
      expect(first.system[0].text).toBeTruthy();
      // The model's turn goes back with its tool use; the result follows as the user's, with its status.
      const messages = second.messages as Array<{ role: string; content: WireBody[] }>;
      expect(messages.at(-2)).toEqual({
        role: 'assistant',
        content: [
          { text: 'I will read the notes.' },
          { toolUse: { toolUseId: 'tooluse_rt_1', name: 'fs_read', input: { path: 'notes.md' } } },
        ],
      });
      expect(messages.at(-1)).toEqual({
        role: 'user',
        content: [
          {
            toolResult: {
              toolUseId: 'tooluse_rt_1',
              content: [{ text: expect.stringContaining(notes) }],
              status: 'success',
            },
          },
        ],
      });
    },
  },
};

describe.each([openai, gemini, bedrock])('the $name provider', (p) => {
  let server: FakeServer;
  let h: Harness;
  let wrongKey: Harness;
  /** Requests per model, in arrival order. */
  const seen = (model: string): FakeRequest[] => server.requests.filter((r) => p.modelOf(r) === model);

  function answer(req: FakeRequest): FakeReply {
    const model = p.route(req);
    if (typeof model !== 'string') return model;
    const n = seen(model).length; // this request included
    switch (model) {
      case 'roundtrip':
        return n === 1 ? p.roundtrip.first : p.roundtrip.second;
      case 'ratelimit':
        return n === 1
          ? p.error(429, p.messages.rateLimit, { 'retry-after': '1' })
          : p.reply('ok after a 429', { prompt: 30, completion: 4 });
      case 'down':
        return p.error(503, 'The model is overloaded. Please try again later.');
      case 'bad':
        return p.error(400, p.messages.bad);
      case 'slow':
      case 'hung':
        return { ...p.reply('too late'), delayMs: 60_000 };
      case 'fractional-usage':
        return p.reply('counted oddly', { prompt: 10.5, completion: 2 });
      case 'negative-usage':
        return p.reply('counted oddly', { prompt: -1_000_000, completion: 2 });
      default:
        return p.error(404, p.messages.notFound(model));
    }
  }

  beforeAll(async () => {
    server = await startFakeServer(answer, { http2: p.http2 });
    const workers = p.workers(server.url);
    h = await startHarness({ name: `llm-${p.name}`, activities: workers.good });
    wrongKey = await startHarness({ name: `llm-${p.name}-wrong-key`, activities: workers.wrongKey });
  });
  afterAll(async () => {
    await h?.stop();
    await wrongKey?.stop();
    await server?.close();
  });

  function config(model: string, workspace = makeWorkspace(), overrides: AgentConfigInput = {}): AgentConfig {
    return parseAgentConfig(
      // The verification step would ask each model once more; these tests are about the provider.
      {
        workspace: [workspace],
        verify: false,
        retry: { initialIntervalMs: 100, backoffCoefficient: 2, maximumIntervalMs: 1000, maximumAttempts: 3 },
        ...overrides,
      },
      p.spec(model, server.url),
    );
  }

  async function run(
    harness: Harness,
    model: string,
    goal = 'Read notes.md and tell me what it says.',
    overrides: AgentConfigInput = {},
  ) {
    const agentId = uniqueId(`${p.name}-${model}`);
    const workspace = makeWorkspace({ 'notes.md': `${notes}\n` });
    const { taskId } = await harness.agents.submit(agentId, { goal, config: config(model, workspace, overrides) });
    return { agentId, result: await harness.agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 }) };
  }

  it('runs a tool call round trip, sends what its wire format needs, and counts exactly the usage the server reported', async () => {
    const { result } = await run(h, 'roundtrip');
    expect(result).toMatchObject({
      outcome: 'COMPLETED',
      agentState: 'WAITING_FOR_EVENT',
      ticks: 2,
      tokensUsed: p.roundtrip.tokens,
      finalText: FINAL,
    });
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ name: 'fs.read', args: { path: 'notes.md' }, status: 'ok' }),
    ]);
    const [first, second] = seen('roundtrip');
    p.roundtrip.checkWire(first?.body ?? {}, second?.body ?? {});
  });

  it('retries a 429 (after the server’s Retry-After when it sends one), then completes with no pain injected', async () => {
    const { result } = await run(h, 'ratelimit', 'Say ok.');
    expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'ok after a 429', tokensUsed: 34 });
    expect(result.injections).toEqual([]);
    const [first, second] = seen('ratelimit');
    // The retry policy's own first interval is 100 ms: the wait is the server's one second, except for
    // Bedrock, which sends no Retry-After (the SDK's own retries are off: the policy's backoff is the one).
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(p.retryAfter ? 900 : 100);
  });

  it('fails the task with the provider’s message once the retry policy gives up on a 503', async () => {
    const { agentId, result } = await run(h, 'down', 'Say ok.');
    expect(result).toMatchObject({
      outcome: 'FAILED',
      agentState: 'WAITING_FOR_EVENT',
      error: { code: 'E_UNAVAILABLE', source: `llm ${p.name}` },
    });
    expect(result.error?.message).toContain('The model is overloaded. Please try again later.');
    // Three attempts, all Temporal's: the SDK made one request per attempt.
    expect(seen('down')).toHaveLength(3);
    expect((await h.agents.status(agentId)).agentState).toBe('WAITING_FOR_EVENT');
  });

  it('pauses the agent on 401, naming the credential the worker used, and raises the daemon alert', async () => {
    const before = server.requests.length;
    const { agentId, result } = await run(wrongKey, 'roundtrip', 'Say ok.');
    expect(result).toMatchObject({
      outcome: 'FAILED',
      agentState: 'ERROR_PAUSED',
      reason: { code: 'FATAL' },
      error: { code: 'E_AUTH', kind: 'fatal' },
    });
    expect(result.reason?.message).toContain(p.messages.wrongKey);
    expect(server.requests.length - before).toBe(1); // never retried
    p.check401?.(server.requests.at(-1) as FakeRequest);
    expect(await wrongKey.agents.status(agentId)).toMatchObject({
      agentState: 'ERROR_PAUSED',
      reason: { code: 'FATAL' },
    });
    expect(await alertFor(wrongKey, agentId)).toMatchObject({ agentState: 'ERROR_PAUSED', error: { code: 'E_AUTH' } });
  });

  it('fails the task on 400 with the provider’s message, without retrying', async () => {
    const { result } = await run(h, 'bad', 'Say ok.');
    expect(result).toMatchObject({
      outcome: 'FAILED',
      agentState: 'WAITING_FOR_EVENT',
      error: { code: 'EINVAL', kind: 'execution' },
    });
    expect(result.error?.message).toContain(p.messages.badShown);
    expect(result.reason).toBeUndefined();
    expect(seen('bad')).toHaveLength(1);
  });

  it.each([
    ['fractional-usage', /inputTokens is 10\.5, not a whole number >= 0/],
    ['negative-usage', /inputTokens is -1000000, not a whole number >= 0/],
  ])('fails the task with E_SCHEMA when the server reports %s, and counts none of it', async (model, message) => {
    const { agentId, result } = await run(h, model);
    expect(result).toMatchObject({
      outcome: 'FAILED',
      agentState: 'WAITING_FOR_EVENT',
      tokensUsed: 0,
      error: { code: 'E_SCHEMA', kind: 'execution' },
    });
    expect(result.error?.message).toMatch(message);
    // The agent still answers and its budget is intact.
    expect((await h.agents.status(agentId)).tokensUsed).toBe(0);
  });

  it('gives a hung server one llmTimeoutMs per attempt, then fails the task as a timeout, in seconds not an hour', async () => {
    const { result } = await run(h, 'hung', 'Answer.', {
      safety: { llmTimeoutMs: 1500 },
      retry: { initialIntervalMs: 100, maximumIntervalMs: 200, maximumAttempts: 2 },
    });
    expect(result).toMatchObject({ outcome: 'FAILED', error: { code: 'ETIMEDOUT', kind: 'transient' } });
    expect(seen('hung')).toHaveLength(2);
  });

  it('stops a slow call in flight on SYSTEM_HALT, and the server sees the request aborted', async () => {
    const agentId = uniqueId(`${p.name}-slow`);
    const { taskId } = await h.agents.submit(agentId, { goal: 'Take your time.', config: config('slow') });
    const index = await server.waitForRequest((r) => p.modelOf(r) === 'slow', 20_000);
    await h.agents.halt(agentId);
    const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ outcome: 'CANCELLED', agentState: 'STOPPED', reason: { code: 'SYSTEM_HALT' } });
    await server.waitForAbort(index, 5000);
  });
});
