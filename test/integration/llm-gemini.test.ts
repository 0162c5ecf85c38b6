/**
 * The Gemini provider (`@google/genai`, Vertex AI mode) through real workflows on a real server,
 * against a local server that speaks Vertex's REST wire format
 * (`POST /v1beta1/projects/P/locations/L/publishers/google/models/MODEL:generateContent`), reached
 * through `httpOptions.baseUrl`. The model name picks the server's behaviour.
 */
import { parseAgentConfig, type AgentConfig } from '../../core/config';
import { geminiError, geminiResponse, startFakeServer, vertexModelOf, type FakeReply, type FakeRequest, type FakeServer, type WireBody } from '../helpers/fake-llm-server';
import { alertFor, makeWorkspace, startHarness, uniqueId, type Harness } from '../helpers/harness';

const GOOD_KEY = 'vertex-good-key';
const PROJECT_PATH = '/v1beta1/projects/starry-test/locations/us-central1/publishers/google/models/';
let server: FakeServer;
let h: Harness;
let wrongKey: Harness;

const seen = (model: string): FakeRequest[] => server.requests.filter((r) => vertexModelOf(r.path) === model);

/** The model's first turn: a thought, then a function call carrying a thought signature. */
const ROUNDTRIP_PARTS = [
  { text: 'The user wants the notes; read the file.', thought: true },
  { functionCall: { name: 'fs.read', args: { path: 'notes.md' } }, thoughtSignature: 'Q2lRQmpNK3NpZ25hdHVyZQ==' },
];

function answer(req: FakeRequest): FakeReply {
  const model = vertexModelOf(req.path);
  if (req.method !== 'POST' || !model) return geminiError(404, `no route for ${req.method} ${req.path}`);
  if (req.headers['x-goog-api-key'] !== GOOD_KEY) {
    return geminiError(401, 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.');
  }
  const n = seen(model).length; // this request included
  switch (model) {
    case 'roundtrip':
      return n === 1
        ? { json: geminiResponse({ parts: ROUNDTRIP_PARTS, usage: { prompt: 300, candidates: 18, thoughts: 40 } }) }
        : { json: geminiResponse({ parts: [{ text: 'Done. The notes say: hello from the workspace.' }], usage: { prompt: 420, candidates: 14 } }) };
    case 'ratelimit':
      return n === 1
        ? geminiError(429, 'Resource exhausted. Please try again later.', { 'retry-after': '1' })
        : { json: geminiResponse({ parts: [{ text: 'ok after a 429' }], usage: { prompt: 30, candidates: 4 } }) };
    case 'down':
      return geminiError(503, 'The model is overloaded. Please try again later.');
    case 'bad':
      return geminiError(400, 'Unable to submit request because it has an empty text parameter.');
    case 'slow':
      return { json: geminiResponse({ parts: [{ text: 'too late' }] }), delayMs: 60_000 };
    default:
      return geminiError(404, `Publisher Model \`${model}\` was not found.`);
  }
}

beforeAll(async () => {
  server = await startFakeServer(answer);
  h = await startHarness({
    name: 'llm-gemini',
    activities: { llm: { gemini: { baseUrl: server.url, apiKey: GOOD_KEY, project: 'starry-test', location: 'us-central1', env: {} } } },
  });
  // A worker whose environment holds a wrong Vertex API key (express mode: no project).
  wrongKey = await startHarness({
    name: 'llm-gemini-wrong-key',
    activities: { llm: { gemini: { env: { GOOGLE_API_KEY: 'wrong-key', STARRY_GEMINI_BASE_URL: server.url } } } },
  });
});
afterAll(async () => {
  await h?.stop();
  await wrongKey?.stop();
  await server?.close();
});

function config(model: string, workspace = makeWorkspace()): AgentConfig {
  return parseAgentConfig(
    { workspace: [workspace], verify: false, retry: { initialIntervalMs: 100, backoffCoefficient: 2, maximumIntervalMs: 1000, maximumAttempts: 3 } },
    `gemini:${model}`,
  );
}

async function run(harness: Harness, model: string, goal = 'Read notes.md and tell me what it says.') {
  const agentId = uniqueId(`gemini-${model}`);
  const workspace = makeWorkspace({ 'notes.md': 'hello from the workspace\n' });
  const { taskId } = await harness.agents.submit(agentId, { goal, config: config(model, workspace) });
  return { agentId, result: await harness.agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 }) };
}

describe('the Gemini provider on Vertex AI', () => {
  it('runs a function call round trip, replaying the model’s parts (thought signature included) unchanged', async () => {
    const { result } = await run(h, 'roundtrip');
    expect(result).toMatchObject({ outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ticks: 2, tokensUsed: 300 + 18 + 40 + 420 + 14 });
    expect(result.finalText).toBe('Done. The notes say: hello from the workspace.');
    expect(result.toolCalls).toEqual([expect.objectContaining({ name: 'fs.read', args: { path: 'notes.md' }, status: 'ok' })]);

    const [first, second] = seen('roundtrip');
    expect(first?.path).toBe(`${PROJECT_PATH}roundtrip:generateContent`);
    expect(first?.body?.tools[0].functionDeclarations.map((d: { name: string }) => d.name)).toContain('fs.read');
    expect(first?.body?.generationConfig.maxOutputTokens).toBeGreaterThan(0);
    expect(first?.body?.systemInstruction.parts[0].text).toBeTruthy();
    const contents = second?.body?.contents as Array<{ role: string; parts: WireBody[] }>;
    expect(contents.at(-2)).toEqual({ role: 'model', parts: ROUNDTRIP_PARTS });
    expect(contents.at(-1)?.role).toBe('user');
    expect(contents.at(-1)?.parts).toEqual([{ functionResponse: { name: 'fs.read', response: { result: expect.stringContaining('hello from the workspace') } } }]);
  });

  it('retries a 429 after the server’s Retry-After, then completes with no pain injected', async () => {
    const { result } = await run(h, 'ratelimit', 'Say ok.');
    expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'ok after a 429', tokensUsed: 34 });
    expect(result.injections).toEqual([]);
    const [first, second] = seen('ratelimit');
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(900);
  });

  it('fails the task with the provider’s message once the retry policy gives up on a 503', async () => {
    const { result } = await run(h, 'down', 'Say ok.');
    expect(result).toMatchObject({ outcome: 'FAILED', agentState: 'WAITING_FOR_EVENT', error: { code: 'E_UNAVAILABLE', source: 'llm gemini' } });
    expect(result.error?.message).toContain('The model is overloaded. Please try again later.');
    // Three attempts, all Temporal's: the SDK made one request per attempt.
    expect(seen('down')).toHaveLength(3);
  });

  it('pauses the agent on 401, naming the credential the worker used', async () => {
    const before = server.requests.length;
    const { agentId, result } = await run(wrongKey, 'roundtrip', 'Say ok.');
    expect(result).toMatchObject({ outcome: 'FAILED', agentState: 'ERROR_PAUSED', reason: { code: 'FATAL' }, error: { code: 'E_AUTH', kind: 'fatal' } });
    expect(result.reason?.message).toContain('the Vertex AI API key in GOOGLE_API_KEY was rejected');
    expect(server.requests.length - before).toBe(1);
    // Express mode: no project in the path.
    expect(server.requests.at(-1)?.path).toBe('/v1beta1/publishers/google/models/roundtrip:generateContent');
    expect(await wrongKey.agents.status(agentId)).toMatchObject({ agentState: 'ERROR_PAUSED', reason: { code: 'FATAL' } });
    expect(await alertFor(wrongKey, agentId)).toMatchObject({ agentState: 'ERROR_PAUSED', error: { code: 'E_AUTH' } });
  });

  it('fails the task on 400 with the provider’s message, without retrying', async () => {
    const { result } = await run(h, 'bad', 'Say ok.');
    expect(result).toMatchObject({ outcome: 'FAILED', agentState: 'WAITING_FOR_EVENT', error: { code: 'EINVAL', kind: 'execution' } });
    expect(result.error?.message).toContain('empty text parameter');
    expect(result.reason).toBeUndefined();
    expect(seen('bad')).toHaveLength(1);
  });

  it('stops a slow call in flight on SYSTEM_HALT, and the server sees the request aborted', async () => {
    const agentId = uniqueId('gemini-slow');
    const { taskId } = await h.agents.submit(agentId, { goal: 'Take your time.', config: config('slow') });
    const index = await server.waitForRequest((r) => vertexModelOf(r.path) === 'slow', 20_000);
    await h.agents.halt(agentId);
    const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ outcome: 'CANCELLED', agentState: 'STOPPED', reason: { code: 'SYSTEM_HALT' } });
    await server.waitForAbort(index, 5000);
  });
});
