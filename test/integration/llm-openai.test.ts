/**
 * The OpenAI-compatible provider through real workflows on a real server, against a local server that
 * speaks the chat completions wire format (`POST /v1/chat/completions`). The model name in each spec
 * picks the server's behaviour, as a real server routes by model.
 */
import { parseAgentConfig, type AgentConfig, type AgentConfigInput } from '../../core/config';
import { openAiCompletion, openAiError, startFakeServer, type FakeReply, type FakeRequest, type FakeServer, type WireBody } from '../helpers/fake-llm-server';
import { alertFor, makeWorkspace, startHarness, uniqueId, type Harness } from '../helpers/harness';

const GOOD_KEY = 'sk-good';
let server: FakeServer;
let h: Harness;
let wrongKey: Harness;

/** Requests per model, in arrival order. */
const seen = (model: string): FakeRequest[] => server.requests.filter((r) => r.body?.model === model);

function answer(req: FakeRequest): FakeReply {
  if (req.path !== '/v1/chat/completions') return openAiError(404, `no route for ${req.path}`);
  if (req.headers.authorization !== `Bearer ${GOOD_KEY}`) return openAiError(401, 'Incorrect API key provided: sk-wr***ey.');
  const model: string = req.body?.model;
  const n = seen(model).length; // this request included
  switch (model) {
    case 'roundtrip':
      return n === 1
        ? { json: openAiCompletion({ toolCalls: [{ id: 'call_rt_1', name: 'fs_read', arguments: '{"path":"notes.md"}' }], usage: { prompt: 120, completion: 15 } }) }
        : { json: openAiCompletion({ text: 'Done. The notes say: hello from the workspace.', usage: { prompt: 210, completion: 12 } }) };
    case 'ratelimit':
      return n === 1
        ? openAiError(429, 'Rate limit reached for requests', { 'retry-after': '1' })
        : { json: openAiCompletion({ text: 'ok after a 429', usage: { prompt: 30, completion: 4 } }) };
    case 'down':
      return openAiError(503, 'The model is overloaded. Please try again later.');
    case 'bad':
      return openAiError(400, "This model's maximum context length is 8192 tokens.");
    case 'slow':
    case 'hung':
      return { json: openAiCompletion({ text: 'too late' }), delayMs: 60_000 };
    case 'fractional-usage':
      return { json: openAiCompletion({ text: 'counted oddly', usage: { prompt: 10.5, completion: 2 } }) };
    case 'negative-usage':
      return { json: openAiCompletion({ text: 'counted oddly', usage: { prompt: -1_000_000, completion: 2 } }) };
    default:
      return openAiError(404, `The model \`${model}\` does not exist.`);
  }
}

beforeAll(async () => {
  server = await startFakeServer(answer);
  // The key lives in the worker's environment (here: the env the provider reads), never in the task.
  h = await startHarness({ name: 'llm-openai', activities: { llm: { openai: { env: { STARRY_OPENAI_API_KEY: GOOD_KEY } } } } });
  wrongKey = await startHarness({ name: 'llm-openai-wrong-key', activities: { llm: { openai: { env: { OPENAI_API_KEY: 'sk-wrong-key' } } } } });
});
afterAll(async () => {
  await h?.stop();
  await wrongKey?.stop();
  await server?.close();
});

function config(model: string, workspace = makeWorkspace(), overrides: AgentConfigInput = {}): AgentConfig {
  return parseAgentConfig(
    // The verification step would ask each model once more; these tests are about the provider.
    { workspace: [workspace], verify: false, retry: { initialIntervalMs: 100, backoffCoefficient: 2, maximumIntervalMs: 1000, maximumAttempts: 3 }, ...overrides },
    `openai:${model}@${server.url}/v1`,
  );
}

async function run(harness: Harness, model: string, goal = 'Read notes.md and tell me what it says.', overrides: AgentConfigInput = {}) {
  const agentId = uniqueId(`openai-${model}`);
  const workspace = makeWorkspace({ 'notes.md': 'hello from the workspace\n' });
  const { taskId } = await harness.agents.submit(agentId, { goal, config: config(model, workspace, overrides) });
  return { agentId, result: await harness.agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 }) };
}

describe('what the OpenAI-compatible provider reports, checked', () => {
  it.each([
    ['fractional-usage', /inputTokens is 10\.5, not a whole number >= 0/],
    ['negative-usage', /inputTokens is -1000000, not a whole number >= 0/],
  ])('fails the task with E_SCHEMA when the server reports %s, and counts none of it', async (model, message) => {
    const { agentId, result } = await run(h, model);
    expect(result).toMatchObject({ outcome: 'FAILED', agentState: 'WAITING_FOR_EVENT', tokensUsed: 0, error: { code: 'E_SCHEMA', kind: 'execution' } });
    expect(result.error?.message).toMatch(message);
    // The agent still answers and its budget is intact.
    expect((await h.agents.status(agentId)).tokensUsed).toBe(0);
  });

  it('gives a hung server one llmTimeoutMs per attempt, then fails the task as a timeout, in seconds not an hour', async () => {
    const { result } = await run(h, 'hung', 'Answer.', { safety: { llmTimeoutMs: 1500 }, retry: { initialIntervalMs: 100, maximumIntervalMs: 200, maximumAttempts: 2 } });
    expect(result).toMatchObject({ outcome: 'FAILED', error: { code: 'ETIMEDOUT', kind: 'transient' } });
    expect(seen('hung')).toHaveLength(2);
  });
});

describe('the OpenAI-compatible provider', () => {
  it('runs a tool call round trip and counts exactly the usage the server reported', async () => {
    const { result } = await run(h, 'roundtrip');
    expect(result).toMatchObject({ outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ticks: 2, tokensUsed: 120 + 15 + 210 + 12 });
    expect(result.finalText).toBe('Done. The notes say: hello from the workspace.');
    expect(result.toolCalls).toEqual([expect.objectContaining({ name: 'fs.read', args: { path: 'notes.md' }, status: 'ok' })]);

    const [first, second] = seen('roundtrip');
    expect(first?.body?.tools.map((t: { function: { name: string } }) => t.function.name)).toContain('fs_read');
    expect(first?.body?.max_tokens).toBeGreaterThan(0);
    // The second call carries the model's tool call and its result, linked by the call id.
    const messages = second?.body?.messages as WireBody[];
    expect(messages.at(-2)).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_rt_1', type: 'function', function: { name: 'fs_read', arguments: '{"path":"notes.md"}' } }] });
    expect(messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_rt_1' });
    expect(messages.at(-1)?.content).toContain('hello from the workspace');
  });

  it('retries a 429 after the server’s Retry-After, then completes with no pain injected', async () => {
    const { result } = await run(h, 'ratelimit', 'Say ok.');
    expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'ok after a 429', tokensUsed: 34 });
    expect(result.injections).toEqual([]);
    const [first, second] = seen('ratelimit');
    // The retry policy's own first interval is 100 ms: the wait is the server's one second.
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(900);
  });

  it('fails the task with the provider’s message once the retry policy gives up on a 503', async () => {
    const { agentId, result } = await run(h, 'down', 'Say ok.');
    expect(result).toMatchObject({ outcome: 'FAILED', agentState: 'WAITING_FOR_EVENT', error: { code: 'E_UNAVAILABLE', source: 'llm openai' } });
    expect(result.error?.message).toContain('The model is overloaded. Please try again later.');
    expect(seen('down')).toHaveLength(3);
    expect((await h.agents.status(agentId)).agentState).toBe('WAITING_FOR_EVENT');
  });

  it('pauses the agent on 401, naming the credential the worker used', async () => {
    const before = server.requests.length;
    const { agentId, result } = await run(wrongKey, 'roundtrip', 'Say ok.');
    expect(result).toMatchObject({ outcome: 'FAILED', agentState: 'ERROR_PAUSED', reason: { code: 'FATAL' }, error: { code: 'E_AUTH', kind: 'fatal' } });
    expect(result.reason?.message).toContain('the API key in OPENAI_API_KEY was rejected');
    expect(server.requests.length - before).toBe(1); // never retried
    expect(await wrongKey.agents.status(agentId)).toMatchObject({ agentState: 'ERROR_PAUSED', reason: { code: 'FATAL' } });
    expect(await alertFor(wrongKey, agentId)).toMatchObject({ agentState: 'ERROR_PAUSED', error: { code: 'E_AUTH' } });
  });

  it('fails the task on 400 with the provider’s message, without retrying', async () => {
    const { result } = await run(h, 'bad', 'Say ok.');
    expect(result).toMatchObject({ outcome: 'FAILED', agentState: 'WAITING_FOR_EVENT', error: { code: 'EINVAL', kind: 'execution' } });
    expect(result.error?.message).toContain("This model's maximum context length is 8192 tokens.");
    expect(result.reason).toBeUndefined();
    expect(seen('bad')).toHaveLength(1);
  });

  it('stops a slow call in flight on SYSTEM_HALT, and the server sees the request aborted', async () => {
    const agentId = uniqueId('openai-slow');
    const { taskId } = await h.agents.submit(agentId, { goal: 'Take your time.', config: config('slow') });
    const index = await server.waitForRequest((r) => r.body?.model === 'slow', 20_000);
    await h.agents.halt(agentId);
    const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ outcome: 'CANCELLED', agentState: 'STOPPED', reason: { code: 'SYSTEM_HALT' } });
    await server.waitForAbort(index, 5000);
  });
});
