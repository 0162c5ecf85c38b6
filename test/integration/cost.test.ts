/**
 * Cached tokens and money, on the wire: local servers speaking OpenAI's chat completions and Vertex AI's
 * generateContent report the cached part of each prompt (`prompt_tokens_details.cached_tokens`,
 * `cachedContentTokenCount`); the worker prices each call with its table (`STARRY_PRICING`, or the
 * agent's `pricing`), the task's result, the agent's status, the live events and the metrics carry
 * both, and `safety.costBudgetUsd` stops the agent when its dollars are spent. The model name picks the
 * server's behaviour.
 */
import { Client } from '@temporalio/client';
import { openTaskStream } from '../../client/event-stream';
import { parseAgentConfig, type AgentConfigInput } from '../../core/config';
import type { StreamEvent } from '../../core/contract';
import type { Price } from '../../core/pricing';
import { eventually } from '../../dev/poll';
import {
  geminiError,
  geminiResponse,
  openAiCompletion,
  openAiError,
  startFakeServer,
  vertexModelOf,
  type FakeReply,
  type FakeRequest,
  type FakeServer,
} from '../helpers/fake-llm-server';
import {
  makeWorkspace,
  scriptedConfig,
  startEarlyContinueServer,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import type { DevServer } from '../../dev/dev-server';
import { latest, startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';
import type { ChildProcess } from 'node:child_process';

jest.setTimeout(120_000);

const OPENAI_KEY = 'sk-good';
const VERTEX_KEY = 'vertex-good-key';
/** The worker's prices, USD per million tokens. */
const PRICE: Price = { inputPerMTok: 2.5, cachedInputPerMTok: 1.25, outputPerMTok: 10 };
type Usage = { prompt: number; completion: number; cached: number };

/** The wire of each provider: a reply (text or a read of notes.md) with its usage, and the request's output cap. */
const wires = {
  openai: {
    modelOf: (req: FakeRequest) => (req.path === '/v1/chat/completions' ? (req.body?.model as string) : undefined),
    reply(usage: Usage, text?: string): FakeReply {
      return {
        json: openAiCompletion(
          text !== undefined
            ? { text, usage }
            : {
                toolCalls: [{ id: `call_${Math.random()}`, name: 'fs_read', arguments: '{"path":"notes.md"}' }],
                usage,
              },
        ),
      };
    },
    error: openAiError,
    maxOutput: (req: FakeRequest) => req.body?.max_tokens as number,
    spec: (model: string, url: string) => `openai:${model}@${url}/v1`,
  },
  gemini: {
    modelOf: (req: FakeRequest) => vertexModelOf(req.path),
    reply(usage: Usage, text?: string): FakeReply {
      const parts =
        text !== undefined ? [{ text }] : [{ functionCall: { name: 'fs.read', args: { path: 'notes.md' } } }];
      return {
        json: geminiResponse({
          parts,
          usage: { prompt: usage.prompt, candidates: usage.completion, cached: usage.cached },
        }),
      };
    },
    error: geminiError,
    maxOutput: (req: FakeRequest) => req.body?.generationConfig?.maxOutputTokens as number,
    spec: (model: string) => `gemini:${model}`,
  },
};
type ProviderName = keyof typeof wires;

let server: FakeServer;
let h: Harness;
let temporal: Client;
const seen = (p: ProviderName, model: string) => server.requests.filter((r) => wires[p].modelOf(r) === model);

function answer(req: FakeRequest): FakeReply {
  const p: ProviderName | undefined = wires.openai.modelOf(req)
    ? 'openai'
    : wires.gemini.modelOf(req)
      ? 'gemini'
      : undefined;
  if (!p) return openAiError(404, `no route for ${req.path}`);
  const w = wires[p];
  const model = w.modelOf(req)!;
  const n = seen(p, model).length; // this request included
  switch (model) {
    case 'cached':
    case 'env-cached':
      // A tool call, then the answer with most of its prompt read from the cache.
      return n === 1
        ? w.reply({ prompt: 2000, completion: 50, cached: 0 })
        : w.reply({ prompt: 2100, completion: 20, cached: 1536 }, 'The notes say hello.');
    case 'agent-priced':
    case 'unpriced':
      return w.reply({ prompt: 1000, completion: 100, cached: 500 }, 'Done.');
    case 'pricey':
      // Reads forever, each call costing 1000 × 2.5 + 100 × 10 micro-dollars.
      return w.reply({ prompt: 1000, completion: 100, cached: 0 });
    default:
      return w.error(404, `no model ${model}`);
  }
}

beforeAll(async () => {
  server = await startFakeServer(answer);
  const pricing = Object.fromEntries(
    ['cached', 'pricey', 'agent-priced'].flatMap((m) => [
      [`openai:${m}`, PRICE],
      [`gemini:${m}`, PRICE],
    ]),
  );
  h = await startHarness({
    name: 'cost',
    activities: {
      pricing,
      llm: {
        openai: { env: { STARRY_OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: `${server.url}/v1` } },
        gemini: { baseUrl: server.url, apiKey: VERTEX_KEY, project: 'starry-test', location: 'us-central1', env: {} },
      },
    },
  });
  temporal = new Client({ connection: h.connection });
});
afterAll(async () => {
  await h?.stop();
  await server?.close();
});

function configFor(p: ProviderName, model: string, overrides: AgentConfigInput = {}) {
  return parseAgentConfig(
    {
      workspace: [makeWorkspace({ 'notes.md': 'hello\n' })],
      verify: false,
      retry: { initialIntervalMs: 100, backoffCoefficient: 2, maximumIntervalMs: 1000, maximumAttempts: 3 },
      ...overrides,
    },
    wires[p].spec(model, server.url),
  );
}

async function run(p: ProviderName, model: string, overrides: AgentConfigInput = {}) {
  const agentId = uniqueId(`cost-${p}-${model}`);
  const { taskId, workflowId } = await h.agents.submit(agentId, {
    goal: 'Read notes.md and tell me what it says.',
    config: configFor(p, model, overrides),
  });
  const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 });
  return { agentId, workflowId, result };
}

/** The task's live events from its start to its end, as `GET /v1/tasks/{id}/events` streams them. */
async function eventsOf(workflowId: string): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const e of await openTaskStream(temporal, workflowId, { from: 'start' })) {
    events.push(e);
    if (e.event === 'end') break;
  }
  return events;
}

describe.each(['openai', 'gemini'] as const)('the %s provider', (p) => {
  it('reports the cached input tokens it read and the exact cost in the result, the status and the live events', async () => {
    const { agentId, workflowId, result } = await run(p, 'cached');
    // 2000 × 2.5 + 50 × 10, then (2100 − 1536) × 2.5 + 1536 × 1.25 + 20 × 10: 5500 + 3530 micro-dollars.
    expect(result).toMatchObject({
      outcome: 'COMPLETED',
      ticks: 2,
      tokensUsed: 2000 + 50 + 2100 + 20,
      cachedInputTokens: 1536,
      costUsd: 0.00903,
    });
    expect(await h.agents.status(agentId)).toMatchObject({
      tokensUsed: 4170,
      cachedInputTokens: 1536,
      costUsd: 0.00903,
    });
    const events = await eventsOf(workflowId);
    expect(events.filter((e) => e.event === 'llm').map((e) => e.event === 'llm' && e.data.usage)).toEqual([
      { inputTokens: 2000, outputTokens: 50, cachedInputTokens: 0 },
      { inputTokens: 2100, outputTokens: 20, cachedInputTokens: 1536 },
    ]);
    const end = events.at(-1);
    expect(end?.event === 'end' && end.data.result).toMatchObject({ cachedInputTokens: 1536, costUsd: 0.00903 });
  });

  it("prices a model with the agent's own price over the worker's when it is not lower", async () => {
    const mine: Price = { inputPerMTok: 4, cachedInputPerMTok: 2, outputPerMTok: 20 };
    const { result } = await run(p, 'agent-priced', { pricing: { [`${p}:agent-priced`]: mine } });
    // 500 × 4 + 500 × 2 + 100 × 20 micro-dollars (the worker's table would say 2875).
    expect(result).toMatchObject({ outcome: 'COMPLETED', cachedInputTokens: 500, costUsd: 0.005 });
  });

  it('stops the agent STOPPED with COST_BUDGET_EXHAUSTED once its dollars are spent, the last call capped to what they buy', async () => {
    const { agentId, result } = await run(p, 'pricey', { safety: { costBudgetUsd: 0.01 } });
    expect(result).toMatchObject({
      outcome: 'SUSPENDED',
      agentState: 'STOPPED',
      reason: { code: 'COST_BUDGET_EXHAUSTED' },
      costUsd: 0.0105,
    });
    expect(result.reason?.message).toBe('Cost budget exhausted: $0.0105 spent of a budget of $0.01');
    // Three calls of $0.0035, each capped to what is left at $10 per million output tokens: $0.01, $0.0065, $0.003.
    const calls = seen(p, 'pricey');
    expect(calls.map(wires[p].maxOutput)).toEqual([1000, 650, 300]);
    expect(await h.agents.status(agentId)).toMatchObject({
      agentState: 'STOPPED',
      reason: { code: 'COST_BUDGET_EXHAUSTED' },
      costUsd: 0.0105,
      costBudgetUsd: 0.01,
    });
    // Only an admin raises it (a task's config may only lower it); the agent's next task spends up to it.
    expect((await h.agents.unlock(agentId)).message).toContain(
      `the cost budget is still spent ($0.0105 of $0.01): the next LLM call will stop again; raise it first with starry limits ${agentId} --cost-budget-usd N`,
    );
    await expect(
      h.agents.submit(agentId, { goal: 'more', config: configFor(p, 'pricey', { safety: { costBudgetUsd: 0.02 } }) }),
    ).rejects.toThrow(/raising costBudgetUsd needs admin/);
    const changed = await h.agents.setLimits(agentId, { safety: { costBudgetUsd: 0.02 }, by: 'admin' });
    expect(changed.message).toContain('costBudgetUsd 0.01 → 0.02');
    const { taskId } = await h.agents.submit(agentId, { goal: 'more', config: configFor(p, 'pricey') });
    const next = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 });
    expect(next).toMatchObject({ outcome: 'SUSPENDED', reason: { code: 'COST_BUDGET_EXHAUSTED' }, costUsd: 0.0105 });
    expect(seen(p, 'pricey').map(wires[p].maxOutput).slice(3)).toEqual([950, 600, 250]);
    expect(await h.agents.status(agentId)).toMatchObject({ costUsd: 0.021, costBudgetUsd: 0.02 });
  });

  it('refuses at submit a task with a cost budget whose model has no price, naming it and the prices the worker has', async () => {
    const agentId = uniqueId(`cost-${p}-unpriced`);
    const before = seen(p, 'unpriced').length;
    await expect(
      h.agents.submit(agentId, {
        goal: 'Say done.',
        config: configFor(p, 'unpriced', { safety: { costBudgetUsd: 1 } }),
      }),
    ).rejects.toThrow(
      new RegExp(
        `safety.costBudgetUsd is set but there is no price for ${p}:unpriced[\\s\\S]*this worker has prices for openai:cached, gemini:cached`,
      ),
    );
    expect(seen(p, 'unpriced').length).toBe(before);
    // Without a cost budget it runs, and counts its cached tokens, but no cost.
    const { result } = await run(p, 'unpriced');
    expect(result).toMatchObject({ outcome: 'COMPLETED', cachedInputTokens: 500 });
    expect(result).not.toHaveProperty('costUsd');
  });
});

describe('a worker priced by STARRY_PRICING and exporting metrics', () => {
  let receiver: OtlpReceiver;
  let worker: ChildProcess | undefined;
  let w: Harness;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const taskQueue = uniqueId('tq-cost');
    worker = await startWorkerProcess(taskQueue, undefined, {
      env: {
        STARRY_PRICING: JSON.stringify({ 'openai:env-cached': PRICE }),
        STARRY_OPENAI_API_KEY: OPENAI_KEY,
        OPENAI_BASE_URL: `${server.url}/v1`,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_METRIC_EXPORT_INTERVAL: '300',
        OTEL_TRACES_EXPORTER: 'none',
      },
    });
    w = await startHarness({ name: 'cost-metrics', withWorker: false, taskQueue });
  });
  afterAll(async () => {
    if (worker) await killWorker(worker);
    await w?.stop();
    await receiver?.close();
  });

  it('prices the task from its environment and counts the cached tokens in gen_ai.client.token.usage as cache_read', async () => {
    const agentId = uniqueId('cost-env');
    const { taskId } = await w.agents.submit(agentId, {
      goal: 'Read notes.md and tell me what it says.',
      config: configFor('openai', 'env-cached'),
    });
    const result = await w.agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 });
    expect(result).toMatchObject({ outcome: 'COMPLETED', cachedInputTokens: 1536, costUsd: 0.00903 });
    const model = { 'gen_ai.request.model': 'env-cached' };
    await eventually('the cache_read token histogram', async () =>
      latest(receiver.points, 'gen_ai.client.token.usage', { ...model, 'gen_ai.token.type': 'cache_read' }).count === 2
        ? true
        : undefined,
    );
    expect(
      latest(receiver.points, 'gen_ai.client.token.usage', { ...model, 'gen_ai.token.type': 'cache_read' }),
    ).toMatchObject({ count: 2, sum: 1536 });
    // Part of the input, which still counts all of it.
    expect(
      latest(receiver.points, 'gen_ai.client.token.usage', { ...model, 'gen_ai.token.type': 'input' }),
    ).toMatchObject({ count: 2, sum: 4100 });
  });

  it('refuses to start with a bad price table, naming the entry and what is wrong', async () => {
    const started = startWorkerProcess(uniqueId('tq-cost-bad'), undefined, {
      env: { STARRY_PRICING: '{"openai:gpt-4o": {"inputPerMTok": -1, "outputPerMTok": 10}}' },
    }).then(async (child) => {
      await killWorker(child);
      throw new Error('the worker started with a bad price table');
    });
    await expect(started).rejects.toThrow(
      /Invalid STARRY_PRICING:[\s\S]*openai:gpt-4o\.inputPerMTok: must be >= 0[\s\S]*openai:gpt-4o\.cachedInputPerMTok: missing/,
    );
  });
});

describe('a priced task and agent across continue-as-new', () => {
  let dev: DevServer;
  let long: Harness;
  beforeAll(async () => {
    dev = await startEarlyContinueServer('cost-can', 200);
    long = await startHarness({
      name: 'cost-can',
      address: dev.address,
      continueAsNewAfterEvents: 60,
      activities: { pricing: { 'scripted:turns.json': PRICE } },
    });
  });
  afterAll(async () => {
    await long?.stop();
    await dev?.stop();
  });

  it('carries the price, the cached tokens and the cost from run to run, to the cent', async () => {
    // Each call: 200 × 2.5 + 800 × 1.25 + 10 × 10 = 1600 micro-dollars (the scripted model states its cached tokens).
    const usage = { inputTokens: 1000, cachedInputTokens: 800, outputTokens: 10 };
    const turns = [
      ...Array.from({ length: 59 }, () => ({ toolCalls: [{ name: 'fs.read', args: { path: 'notes.md' } }], usage })),
      { text: 'Done.', usage },
    ];
    const config = scriptedConfig(writeScript(turns), makeWorkspace({ 'notes.md': 'n\n' }), {
      safety: { maxTicks: 100, tokenBudget: 1_000_000, costBudgetUsd: 1 },
    });
    const agentId = uniqueId('cost-can');
    const first = await long.agents.submit(agentId, { goal: 'read the notes 59 times', config });
    expect(await long.agents.waitForTask(agentId, first.taskId, { timeoutMs: 120_000 })).toMatchObject({
      outcome: 'COMPLETED',
      ticks: 60,
      cachedInputTokens: 48_000,
      costUsd: 0.096,
    });
    const runs = [];
    const client = new Client({ connection: long.connection });
    for await (const r of client.workflow.list({ query: `WorkflowId="${first.workflowId}"` })) runs.push(r);
    expect(runs.length).toBeGreaterThan(2);
    const second = await long.agents.submit(agentId, { goal: 'once more', config });
    const again = await long.agents.waitForTask(agentId, second.taskId, { timeoutMs: 120_000 });
    expect(again).toMatchObject({ outcome: 'COMPLETED', cachedInputTokens: 48_000, costUsd: 0.096 });
    // The agent continued as new meanwhile too: its totals are both tasks'.
    const agentRuns = [];
    for await (const r of client.workflow.list({ query: `WorkflowId="agent-${agentId}"` })) agentRuns.push(r);
    expect(agentRuns.length).toBeGreaterThan(1);
    expect(await long.agents.status(agentId)).toMatchObject({ cachedInputTokens: 96_000, costUsd: 0.192 });
  });
});
