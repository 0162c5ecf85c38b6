/**
 * Metrics (workers/metrics.ts, core/telemetry.ts `METRIC`): a worker process pointed at a collector (an
 * in-test OTLP server decoding the real protobuf, over HTTP or gRPC) or scraped by Prometheus sends the
 * tasks' counters (ticks, pain, breaker trips, lockouts, halts, outcomes), the LLM and tool histograms and
 * Temporal's own worker metrics; a replay counts nothing; the models and MCP servers tasks name add no
 * series beyond the worker's priced models and one `mcp`. Workers run as processes here: a process's
 * metrics come with its Temporal runtime, which this one installed without them.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually } from '../../dev/poll';
import { freePort } from '../../dev/dev-server';
import { projectRoot } from '../../dev/paths';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import {
  latest,
  startOtlpGrpcReceiver,
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedPoint,
} from '../helpers/otlp-receiver';
import {
  done,
  LIST,
  runScenario,
  SCENARIOS,
  turn,
  USAGE,
  WORKSPACE_FILES,
  type ScenarioRun,
} from '../helpers/scenarios';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

let h: Harness;
const children: ChildProcess[] = [];
beforeAll(async () => {
  // Client only: the workers are processes of their own.
  h = await startHarness({ name: 'metrics', withWorker: false });
});
afterAll(async () => {
  for (const c of children) await killWorker(c);
  await h?.stop();
});

/** A worker process on a task queue of its own, with `env`; its output kept. */
async function meteredWorker(env: Record<string, string>, output: string[] = [], script?: string): Promise<Harness> {
  const taskQueue = uniqueId('tq-metrics');
  children.push(await startWorkerProcess(taskQueue, undefined, { env, output, ...(script ? { script } : {}) }));
  const client = await startHarness({ name: 'metrics', withWorker: false, taskQueue });
  harnesses.push(client);
  return client;
}
const harnesses: Harness[] = [];
afterAll(async () => {
  for (const x of harnesses) await x.stop();
});

/** A price, for a worker's table (`STARRY_PRICING`): the models it prices are named in the metrics. */
const PRICE = { inputPerMTok: 1, cachedInputPerMTok: 1, outputPerMTok: 1 };

/** Metrics over OTLP/HTTP to `receiver`, pushed every 300 ms; no traces. */
const otlpTo = (receiver: OtlpReceiver) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_METRIC_EXPORT_INTERVAL: '300',
  OTEL_TRACES_EXPORTER: 'none',
  OTEL_SERVICE_NAME: 'openstarry-metrics-test',
});

/** Wait until the latest value of `name` (for `match`) is `value`; then a few more pushes must not change it. */
async function settles(points: ReceivedPoint[], name: string, match: Record<string, unknown>, value: number) {
  await eventually(`${name} ${JSON.stringify(match)} = ${value}`, async () =>
    latest(points, name, match).value === value ? true : undefined,
  );
  await new Promise((resolve) => setTimeout(resolve, 1000)); // three more pushes
  expect(latest(points, name, match).value).toBe(value);
}

describe('a worker exporting metrics over OTLP/HTTP', () => {
  let receiver: OtlpReceiver;
  let w: Harness;
  let eperm: ScenarioRun;
  const output: string[] = [];
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    // The scenario's script is turns.json: priced, so the metrics name it.
    w = await meteredWorker(
      { ...otlpTo(receiver), STARRY_PRICING: JSON.stringify({ 'scripted:turns.json': PRICE }) },
      output,
    );
    eperm = await runScenario(w, SCENARIOS.eperm);
  });
  afterAll(() => receiver?.close());

  it('says where its metrics go when it starts', () => {
    expect(output.join('')).toContain(
      `metrics: OTLP/HTTP to ${receiver.url}/v1/metrics every 0.3 s as service openstarry-metrics-test`,
    );
  });

  it("counts the EPERM task's pain, its ticks and its outcome, each once", async () => {
    expect(eperm.result.outcome).toBe('COMPLETED');
    const { points } = receiver;
    await settles(points, 'starry.tasks', { 'starry.task.outcome': 'COMPLETED' }, 1);
    expect(latest(points, 'starry.pain', { 'starry.pain.code': 'EPERM', 'starry.pain.kind': 'execution' })).toEqual(
      expect.objectContaining({ value: 1, series: 1 }),
    );
    expect(latest(points, 'starry.pain').value).toBe(1);
    expect(latest(points, 'starry.ticks').value).toBe(eperm.result.ticks);
    expect(latest(points, 'starry.tasks').value).toBe(1);
    for (const name of ['starry.breaker.trips', 'starry.lockouts', 'starry.halts'])
      expect(latest(points, name).value).toBe(0);
    const pain = points.find((p) => p.name === 'starry.pain')!;
    expect(pain).toMatchObject({ unit: '{pain}', resource: { 'service.name': 'openstarry-metrics-test' } });
    expect(points.find((p) => p.name === 'starry.ticks')?.unit).toBe('{tick}');
  });

  it('records the tokens of every LLM call by type, and a duration per call', async () => {
    const { points } = receiver;
    const ticks = eperm.result.ticks;
    const chat = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openstarry.scripted',
      'gen_ai.request.model': 'turns.json',
    };
    await eventually('the token histograms of every call', async () =>
      latest(points, 'gen_ai.client.token.usage', { ...chat, 'gen_ai.token.type': 'output' }).count === ticks
        ? true
        : undefined,
    );
    const input = latest(points, 'gen_ai.client.token.usage', { ...chat, 'gen_ai.token.type': 'input' });
    const output = latest(points, 'gen_ai.client.token.usage', { ...chat, 'gen_ai.token.type': 'output' });
    // What the scripted model said it used, call by call; together the task's tokens.
    const said = SCENARIOS.eperm.turns.slice(0, ticks).map((t) => t.usage!);
    const sum = (k: 'inputTokens' | 'outputTokens') => said.reduce((n, u) => n + u[k], 0);
    expect(input).toMatchObject({ count: ticks, sum: sum('inputTokens') });
    expect(output).toMatchObject({ count: ticks, sum: sum('outputTokens') });
    expect(input.sum + output.sum).toBe(eperm.result.tokensUsed);
    const duration = latest(points, 'gen_ai.client.operation.duration', chat);
    expect(duration.count).toBe(ticks);
    expect(duration.sum).toBeGreaterThan(0);
    const token = points.find((p) => p.name === 'gen_ai.client.token.usage')!;
    expect(token.unit).toBe('{token}');
    // The conventions' bucket advice.
    expect(token.bounds).toEqual([
      1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
    ]);
    expect(points.find((p) => p.name === 'gen_ai.client.operation.duration')?.unit).toBe('s');
  });

  it('records a duration per tool call, the failed one with error.type EPERM', async () => {
    const { points } = receiver;
    await eventually('the tool histograms', async () =>
      latest(points, 'starry.tool.duration').count === 3 ? true : undefined,
    );
    expect(latest(points, 'starry.tool.duration', { 'gen_ai.tool.name': 'fs.read', 'error.type': 'EPERM' }).count).toBe(
      1,
    );
    const ok = points.filter((p) => p.name === 'starry.tool.duration' && p.attributes['error.type'] === undefined);
    expect(new Set(ok.map((p) => p.attributes['gen_ai.tool.name']))).toEqual(new Set(['fs.read', 'fs.list']));
    expect(ok[0]?.unit).toBe('s');
  });

  it("sends Temporal's own worker metrics the same way", () => {
    const temporal = new Set(receiver.points.filter((p) => p.name.startsWith('temporal_')).map((p) => p.name));
    expect(temporal).toContain('temporal_workflow_completed');
    expect(temporal).toContain('temporal_activity_execution_latency');
  });

  it('counts a breaker: the repeat alert and the lockout it ends in, by rung, reason and state', async () => {
    const run = await runScenario(w, SCENARIOS.repeatLockout);
    expect(run.result.outcome).toBe('SUSPENDED');
    const { points } = receiver;
    await settles(points, 'starry.tasks', { 'starry.task.outcome': 'SUSPENDED' }, 1);
    expect(latest(points, 'starry.breaker.trips', { 'starry.breaker.rung': 'REPEAT_ALERT' }).value).toBe(1);
    expect(latest(points, 'starry.breaker.trips', { 'starry.breaker.rung': 'REPEATED_FAILURE' }).value).toBe(1);
    expect(
      latest(points, 'starry.lockouts', {
        'starry.lockout.reason': 'REPEATED_FAILURE',
        'starry.agent.state': 'SAFETY_LOCKOUT',
      }),
    ).toMatchObject({ value: 1, series: 1 });
  });

  it('counts a human halt and the task it cancelled', async () => {
    const workspace = makeWorkspace(WORKSPACE_FILES);
    // A slow first answer: the halt arrives while the LLM call is in flight.
    const script = writeScript([{ delayMs: 20_000, toolCalls: [LIST], usage: { ...USAGE } }, done()]);
    const agentId = uniqueId('metrics-halt');
    const { taskId, workflowId } = await w.agents.submit(agentId, {
      goal: 'List, slowly.',
      config: scriptedConfig(script, workspace),
    });
    const task = w.agents.client.workflow.getHandle(workflowId);
    await eventually('the slow LLM call to start', async () => {
      const d = await task.describe().catch(() => undefined);
      return d?.raw.pendingActivities?.some((a) => a.activityType?.name === 'llm') ? true : undefined;
    });
    await w.agents.halt(agentId, { by: 'metrics test' });
    expect(await w.agents.waitForTask(agentId, taskId)).toMatchObject({ outcome: 'CANCELLED' });
    const { points } = receiver;
    await settles(points, 'starry.tasks', { 'starry.task.outcome': 'CANCELLED' }, 1);
    expect(latest(points, 'starry.halts').value).toBe(1);
    expect(latest(points, 'gen_ai.client.operation.duration', { 'error.type': 'CANCELLED' }).count).toBe(1);
  });
});

describe('a worker set up for CloudWatch (delta temporality, exponential histograms)', () => {
  it('sends deltas, and its histograms as base-2 exponential ones, from which percentiles are computed', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const w = await meteredWorker({
        ...otlpTo(receiver),
        OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'delta',
        OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'base2_exponential_bucket_histogram',
      });
      const run = await runScenario(w, SCENARIOS.eperm);
      const { points } = receiver;
      const durations = await eventually('the LLM call durations', async () => {
        const d = points.filter((p) => p.name === 'gen_ai.client.operation.duration');
        return d.reduce((n, p) => n + (p.count ?? 0), 0) === run.result.ticks ? d : undefined;
      });
      for (const d of durations) expect(d).toMatchObject({ temporality: 1, scale: expect.any(Number) });
      expect(durations.every((d) => d.bounds === undefined)).toBe(true);
      // Deltas: the EPERM is counted once over all pushes, not once per push.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const pain = points.filter((p) => p.name === 'starry.pain');
      expect(pain.every((p) => p.temporality === 1)).toBe(true);
      expect(pain.reduce((n, p) => n + (p.value ?? 0), 0)).toBe(1);
    } finally {
      await receiver.close();
    }
  });
});

describe('a worker that replays every task from its history (no workflow cache)', () => {
  it('counts each fact once all the same', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const w = await meteredWorker(otlpTo(receiver), [], UNCACHED_WORKER);
      const run = await runScenario(w, SCENARIOS.eperm);
      expect(run.result.outcome).toBe('COMPLETED');
      const { points } = receiver;
      await settles(points, 'starry.tasks', { 'starry.task.outcome': 'COMPLETED' }, 1);
      expect(latest(points, 'starry.pain', { 'starry.pain.code': 'EPERM' }).value).toBe(1);
      expect(latest(points, 'starry.ticks').value).toBe(run.result.ticks);
      // It did replay: each workflow task of the task but the first replayed the history before it.
      expect(
        latest(points, 'temporal_workflow_task_replay_latency', { workflow_type: 'taskWorkflow' }).count,
      ).toBeGreaterThanOrEqual(run.result.ticks);
    } finally {
      await receiver.close();
    }
  });
});

/**
 * A worker process as `starry worker` runs it (metrics started first, in the runtime's one install),
 * keeping no workflow in its cache: each workflow task replays the history so far.
 */
const UNCACHED_WORKER = (() => {
  const lib = (p: string) => JSON.stringify(path.join(projectRoot(), 'lib', p));
  return `
    const { workerConfigFromEnv } = require(${lib('workers/env.js')});
    const { startMetrics } = require(${lib('workers/metrics.js')});
    const { installWorkerLogger } = require(${lib('workers/log.js')});
    const { connectWorker } = require(${lib('workers/connection.js')});
    const { createWorker } = require(${lib('workers/worker.js')});
    (async () => {
      const config = workerConfigFromEnv();
      const metrics = await startMetrics(config.metrics);
      if (!installWorkerLogger('WARN', { metrics })) throw new Error('runtime not installed');
      const connection = await connectWorker(config.temporal);
      const worker = await createWorker({ connection, config, metrics, maxCachedWorkflows: 0 });
      console.log('worker ready');
      await worker.run();
    })().catch((err) => { console.error(err); process.exit(1); });`;
})();

describe('a worker scraped by Prometheus', () => {
  it('serves the counters and histograms under sanitized names, with Temporal’s, on /metrics', async () => {
    const port = await freePort();
    const output: string[] = [];
    const w = await meteredWorker(
      { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: String(port) },
      output,
    );
    expect(output.join('')).toContain(`metrics: Prometheus at http://localhost:${port}/metrics`);
    const run = await runScenario(w, SCENARIOS.eperm);
    expect(run.result.outcome).toBe('COMPLETED');
    const text = await eventually('the task counted on /metrics', async () => {
      const body = await (await fetch(`http://localhost:${port}/metrics`)).text();
      return /^starry_tasks_total\{.*starry_task_outcome="COMPLETED".*\} 1/m.test(body) ? body : undefined;
    });
    expect(text).toMatch(/^starry_pain_total\{.*starry_pain_code="EPERM".*\} 1$/m);
    expect(text).toMatch(/^starry_pain_total\{.*starry_pain_kind="execution".*\} 1$/m);
    expect(text).toMatch(new RegExp(`^starry_ticks_total\\{.*\\} ${run.result.ticks}$`, 'm'));
    const input = SCENARIOS.eperm.turns.reduce((n, t) => n + t.usage!.inputTokens, 0);
    expect(text).toMatch(
      new RegExp(`^gen_ai_client_token_usage_sum\\{.*gen_ai_token_type="input".*\\} ${input}$`, 'm'),
    );
    expect(text).toContain('\nstarry_tool_duration_count{gen_ai_tool_name="fs.read",error_type="EPERM"} 1\n');
    expect(text).toContain('\n# UNIT starry_tool_duration s\n');
    expect(text).toMatch(/^temporal_workflow_completed_total\{/m);
  });

  it('refuses to start on a port in use, saying which variable moves it', async () => {
    const port = await freePort();
    await meteredWorker({ OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: String(port) });
    await expect(
      startWorkerProcess(uniqueId('tq-metrics'), undefined, {
        env: { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: String(port) },
      }),
    ).rejects.toThrow(`metrics: localhost:${port} is in use`);
  });
});

describe('a worker whose tasks name models and MCP servers of their own', () => {
  it('adds no series for them: the models it prices by name, every other _OTHER, every MCP tool mcp', async () => {
    const port = await freePort();
    const server = path.resolve(__dirname, '../fixtures/mcp/server.js');
    // The tasks' workspace and scripts: a root of their own (the temp dir holds the worker's journal).
    const root = mkdtempSync(path.join(os.tmpdir(), 'starry-metrics-models-'));
    const policy = {
      roots: [root],
      mcpCommands: [{ command: 'node', readOnly: [path.dirname(server), path.join(projectRoot(), 'node_modules')] }],
      allowRoot: true,
    };
    const w = await meteredWorker({
      OTEL_METRICS_EXPORTER: 'prometheus',
      OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
      STARRY_PRICING: JSON.stringify({ 'scripted:priced.json': PRICE }),
      STARRY_WORKER_POLICY: JSON.stringify(policy),
    });
    const workspace = makeWorkspace({}, root);
    /** A task whose script is a file of this name: its model, as the metrics would name it. */
    const run = async (file: string, turns: unknown[], tools = {}) => {
      const script = path.join(mkdtempSync(path.join(root, 'script-')), file);
      writeFileSync(script, JSON.stringify({ turns }));
      const agentId = uniqueId('metrics-models');
      const { taskId } = await w.agents.submit(agentId, {
        goal: 'Answer.',
        config: scriptedConfig(script, workspace, { tools }),
      });
      return w.agents.waitForTask(agentId, taskId);
    };
    const MODELS = 20;
    const SERVERS = 5;
    const servers = Array.from({ length: SERVERS }, (_, i) => `made${i}`);
    const results = await Promise.all([
      run('priced.json', [done()]),
      ...Array.from({ length: MODELS }, (_, i) => run(`made-up-model-${i}.json`, [done()])),
      run('made-up-servers.json', [turn(...servers.map((s) => ({ name: `${s}.echo`, args: { text: s } }))), done()], {
        mcp: Object.fromEntries(servers.map((s) => [s, { command: 'node', args: [server] }])),
      }),
    ]);
    for (const r of results) expect(r.outcome).toBe('COMPLETED');
    expect(results.at(-1)?.toolCalls.map((c) => c.status)).toEqual(servers.map(() => 'ok'));

    const text = await eventually('the last task on /metrics', async () => {
      const body = await (await fetch(`http://localhost:${port}/metrics`)).text();
      return /^starry_tool_duration_count\{gen_ai_tool_name="mcp"\} 5$/m.test(body) ? body : undefined;
    });
    /** The distinct label sets of one metric's series. */
    const series = (metric: string) =>
      new Set([...text.matchAll(new RegExp(`^${metric}\\{(.*)\\} `, 'gm'))].map((m) => m[1]));
    const values = (label: string) =>
      new Set([...text.matchAll(new RegExp(`${label}="([^"]*)"`, 'g'))].map((m) => m[1]));
    // 22 tasks, 21 models and 5 servers of their own: two model names, one tool name.
    expect(values('gen_ai_request_model')).toEqual(new Set(['priced.json', '_OTHER']));
    expect(values('gen_ai_tool_name')).toEqual(new Set(['mcp']));
    // Two models × input and output: four series of token counts, one of tool durations.
    expect(series('gen_ai_client_token_usage_count').size).toBe(4);
    expect(series('gen_ai_client_operation_duration_count').size).toBe(2);
    expect(series('starry_tool_duration_count').size).toBe(1);
  });
});

describe('a worker speaking OTLP/gRPC', () => {
  it('sends its traces and its metrics to the gRPC endpoint as it is', async () => {
    const receiver = await startOtlpGrpcReceiver();
    try {
      const output: string[] = [];
      const w = await meteredWorker(
        {
          OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_METRIC_EXPORT_INTERVAL: '300',
          OTEL_BSP_SCHEDULE_DELAY: '50',
        },
        output,
      );
      expect(output.join('')).toContain(`traces: OTLP/gRPC to ${receiver.url}`);
      expect(output.join('')).toContain(`metrics: OTLP/gRPC to ${receiver.url}`);
      const run = await runScenario(w, SCENARIOS.eperm);
      await eventually('the task span', async () =>
        receiver.spans.find((s) => s.name === 'invoke_agent' && s.attributes['gen_ai.agent.id'] === run.agentId),
      );
      expect(receiver.spans.find((s) => s.attributes['error.type'] === 'EPERM')?.name).toBe('execute_tool fs.read');
      await settles(receiver.points, 'starry.tasks', { 'starry.task.outcome': 'COMPLETED' }, 1);
      expect(latest(receiver.points, 'starry.pain', { 'starry.pain.code': 'EPERM' }).value).toBe(1);
    } finally {
      await receiver.close();
    }
  });
});
