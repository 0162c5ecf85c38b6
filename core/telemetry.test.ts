import { safetyConfigSchema } from './config';
import { normalizedError, type ErrorCode } from './errors';
import type { LlmSpec } from './llm-spec';
import {
  breakerEvents,
  chatContentAttributes,
  CONTENT_CHARS,
  toolContentAttributes,
  chatResultAttributes,
  chatSpan,
  countsOf,
  endCounts,
  errorType,
  haltEvent,
  llmMetricAttributes,
  llmTarget,
  meteredToolName,
  METRIC,
  OTHER,
  painEvent,
  remoteSpan,
  taskSpanAttributes,
  toolMetricAttributes,
  toolSpan,
  type MetricCount,
} from './telemetry';

const safety = safetyConfigSchema().parse({});

describe('telemetry: spans', () => {
  it('names the provider and model of every LLM spec the way the GenAI conventions do', () => {
    const specs: LlmSpec[] = [
      { provider: 'openai', model: 'gpt-4o-mini' },
      { provider: 'gemini', model: 'gemini-2.5-flash' },
      { provider: 'bedrock', model: 'amazon.nova-lite-v1:0' },
      { provider: 'local', modelPath: '/m/qwen.gguf' },
      { provider: 'scripted', file: '/tmp/turns.json' },
    ];
    expect(specs.map((spec) => Object.values(llmTarget(spec)))).toEqual([
      ['openai', 'gpt-4o-mini'],
      ['gcp.gen_ai', 'gemini-2.5-flash'],
      ['aws.bedrock', 'amazon.nova-lite-v1:0'],
      ['openstarry.local', 'qwen.gguf'],
      ['openstarry.scripted', 'turns.json'],
    ]);
  });

  it('gives the task span ids and the goal length, never the goal', () => {
    const attributes = taskSpanAttributes({
      agentId: 'a1',
      taskId: 'task-1',
      goal: 'read the secret',
      llm: { provider: 'openai', model: 'm' },
    });
    expect(attributes).toMatchObject({ 'gen_ai.agent.id': 'a1', 'starry.task.id': 'task-1', 'starry.goal.length': 15 });
    expect(JSON.stringify(attributes)).not.toContain('secret');
  });

  it('names chat and tool spans "{operation} {target}" and reads the finish reason from the answer', () => {
    expect(chatSpan({ provider: 'openai', model: 'gpt-4o' }, 2, 512)).toEqual({
      name: 'chat gpt-4o',
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.request.max_tokens': 512,
        'starry.tick': 2,
      },
    });
    expect(
      chatResultAttributes({
        toolCalls: [{ id: '1', name: 'fs.read', args: {} }],
        usage: { inputTokens: 7, outputTokens: 3 },
      }),
    ).toEqual({
      'gen_ai.usage.input_tokens': 7,
      'gen_ai.usage.output_tokens': 3,
      'gen_ai.response.finish_reasons': ['tool_calls'],
    });
    // The cached part of the input under the conventions' name, and the call's cost when the task has a price.
    expect(
      chatResultAttributes(
        { toolCalls: [], usage: { inputTokens: 2100, outputTokens: 20, cachedInputTokens: 1536 } },
        0.00353,
      ),
    ).toEqual({
      'gen_ai.usage.input_tokens': 2100,
      'gen_ai.usage.output_tokens': 20,
      'gen_ai.usage.cache_read.input_tokens': 1536,
      'starry.llm.cost_usd': 0.00353,
      'gen_ai.response.finish_reasons': ['stop'],
    });
    expect(toolSpan('fs.read', 't1-0', 1).name).toBe('execute_tool fs.read');
    expect(errorType({ code: 'EPERM' })).toBe('EPERM');
    expect(errorType(undefined)).toBe('_OTHER');
  });
});

describe("telemetry: a caller's span", () => {
  it('reads the trace id, span id and sampled flag of a traceparent', () => {
    expect(remoteSpan('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
    });
    expect(remoteSpan('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00').traceFlags).toBe(0);
  });
});

describe('telemetry: events', () => {
  it('grades pain as the seeds do: EPERM 3, ENOENT 2, the rest 1', () => {
    const level = (code: ErrorCode) =>
      painEvent(normalizedError({ code, message: 'x', source: 'fs.read' }), 1, 1).attributes['starry.pain.level'];
    expect([level('EPERM'), level('ENOENT'), level('ETIMEDOUT')]).toEqual([3, 2, 1]);
  });

  it('reports each tripped rung with its count, threshold and the resulting state', () => {
    const counters = {
      consecutiveFailures: 8,
      repeat: null,
      window: ['failed', 'failed', 'failed', 'failed', 'failed', 'failed', 'failed', 'failed'] as Array<
        'ok' | 'failed'
      >,
    };
    const events = breakerEvents(
      safety,
      {
        alerts: [
          { kind: 'FRUSTRATION', toolName: 'fs.read', fingerprint: 'f', consecutiveFailures: 5, repeatCount: 1 },
        ],
        lock: { agentState: 'ERROR_PAUSED', reason: { code: 'ERROR_CASCADE', message: 'x' } },
      },
      { counters },
    );
    expect(events.map((e) => e.attributes)).toEqual([
      {
        'starry.breaker.rung': 'FRUSTRATION',
        'starry.breaker.count': 5,
        'starry.breaker.threshold': safety.frustrationThreshold,
        'starry.breaker.state': 'turn_skipped',
      },
      {
        'starry.breaker.rung': 'ERROR_CASCADE',
        'starry.breaker.count': 8,
        'starry.breaker.threshold': safety.cascadeErrors,
        'starry.breaker.state': 'ERROR_PAUSED',
      },
    ]);
  });

  it('reports the cost budget with the dollars spent and the budget', () => {
    const lock = {
      agentState: 'STOPPED' as const,
      reason: { code: 'COST_BUDGET_EXHAUSTED' as const, message: 'spent' },
    };
    expect(breakerEvents({ ...safety, costBudgetUsd: 0.01 }, { lock }, { costUsd: 0.0105 })[0]?.attributes).toEqual({
      'starry.breaker.rung': 'COST_BUDGET_EXHAUSTED',
      'starry.breaker.count': 0.0105,
      'starry.breaker.threshold': 0.01,
      'starry.breaker.state': 'STOPPED',
    });
  });

  it('does not count a fatal error as a breaker', () => {
    const lock = { agentState: 'ERROR_PAUSED' as const, reason: { code: 'FATAL' as const, message: 'E_AUTH' } };
    expect(breakerEvents(safety, { lock }, {})).toEqual([]);
  });
});

describe('telemetry: metrics', () => {
  const shown = (counts: MetricCount[]) => counts.map((c) => [c.metric.name, c.value, c.attributes]);

  it('counts pain by code and kind, a breaker trip by rung and a halt, from their events', () => {
    const eperm = normalizedError({ code: 'EPERM', message: 'denied', source: 'fs.read' });
    const lock = {
      agentState: 'SAFETY_LOCKOUT' as const,
      reason: { code: 'LOOP_CAP' as const, message: 'too many ticks' },
    };
    expect(shown(countsOf(painEvent(eperm, 2, 3)))).toEqual([
      ['starry.pain', 1, { 'starry.pain.code': 'EPERM', 'starry.pain.kind': 'execution' }],
    ]);
    expect(shown(breakerEvents(safety, { lock }, { tick: 51 }).flatMap(countsOf))).toEqual([
      ['starry.breaker.trips', 1, { 'starry.breaker.rung': 'LOOP_CAP' }],
    ]);
    expect(shown(countsOf(haltEvent(4)))).toEqual([['starry.halts', 1, {}]]);
  });

  it('counts a run by its outcome, and the lock it ended in as a lockout (a fatal error too)', () => {
    expect(shown(endCounts('COMPLETED'))).toEqual([['starry.tasks', 1, { 'starry.task.outcome': 'COMPLETED' }]]);
    expect(
      shown(endCounts('FAILED', { agentState: 'ERROR_PAUSED', reason: { code: 'FATAL', message: 'E_AUTH: 401' } })),
    ).toEqual([
      ['starry.tasks', 1, { 'starry.task.outcome': 'FAILED' }],
      ['starry.lockouts', 1, { 'starry.lockout.reason': 'FATAL', 'starry.agent.state': 'ERROR_PAUSED' }],
    ]);
  });

  const PRICE = { inputPerMTok: 1, cachedInputPerMTok: 1, outputPerMTok: 1 };

  it('labels the LLM and tool histograms as the chat span does, error.type only on failure', () => {
    const spec: LlmSpec = { provider: 'openai', model: 'gpt-4o-mini' };
    const pricing = { 'openai:gpt-4o-mini': PRICE };
    expect(llmMetricAttributes(spec, { pricing })).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
    });
    expect(llmMetricAttributes(spec, { pricing, failed: { code: 'E_RATE_LIMIT' } })['error.type']).toBe('E_RATE_LIMIT');
    expect(toolMetricAttributes('fs.read')).toEqual({ 'gen_ai.tool.name': 'fs.read' });
    expect(toolMetricAttributes('fs.read', {})).toEqual({ 'gen_ai.tool.name': 'fs.read', 'error.type': '_OTHER' });
  });

  it('names in the metrics only the models the worker prices: any other model a task names is _OTHER', () => {
    const pricing = {
      'openai:gpt-4o-mini': PRICE,
      'openai:qwen@http://10.0.0.9/v1': PRICE,
      'scripted:turns.json': PRICE,
    };
    const named = (spec: LlmSpec) => llmMetricAttributes(spec, { pricing })['gen_ai.request.model'] as string;
    expect(named({ provider: 'openai', model: 'gpt-4o-mini' })).toBe('gpt-4o-mini');
    expect(named({ provider: 'openai', model: 'gpt-4o-mini', baseUrl: 'http://10.0.0.9/v1' })).toBe('gpt-4o-mini');
    expect(named({ provider: 'openai', model: 'qwen', baseUrl: 'http://10.0.0.9/v1' })).toBe('qwen');
    expect(named({ provider: 'scripted', file: '/srv/ws/a/turns.json' })).toBe('turns.json');
    // 1,000 names of the task's own: one value, whatever they are.
    const models = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      models.add(named({ provider: 'openai', model: `made-up-${i}` }));
      models.add(named({ provider: 'scripted', file: `/srv/ws/a/turns-${i}.json` }));
      models.add(named({ provider: 'openai', model: 'qwen', baseUrl: `http://10.0.0.${i % 256}:${i}/v1` }));
    }
    expect([...models]).toEqual([OTHER]);
    expect(OTHER).toBe('_OTHER');
    // Without a price table, no model is named.
    expect(llmMetricAttributes({ provider: 'gemini', model: 'gemini-2.5-flash' })['gen_ai.request.model']).toBe(OTHER);
    expect(llmMetricAttributes({ provider: 'gemini', model: 'x' })['gen_ai.provider.name']).toBe('gcp.gen_ai');
  });

  it("names a worker's tools, calls every MCP server's tool mcp and anything else _OTHER", () => {
    expect(meteredToolName('fs.read', 'worker')).toBe('fs.read');
    expect(meteredToolName('weather.forecast', 'worker')).toBe('weather.forecast');
    expect(new Set(['gh.search', 'x1.ok', 'x2.ok'].map((n) => meteredToolName(n, 'mcp')))).toEqual(new Set(['mcp']));
    expect(meteredToolName('made.up', 'unknown')).toBe(OTHER);
  });

  it("keeps the GenAI conventions' names, units and bucket advice", () => {
    expect(METRIC.tokenUsage).toMatchObject({ name: 'gen_ai.client.token.usage', kind: 'histogram', unit: '{token}' });
    expect(METRIC.tokenUsage.buckets).toEqual([
      1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
    ]);
    expect(METRIC.operationDuration).toMatchObject({ name: 'gen_ai.client.operation.duration', unit: 's' });
    expect(METRIC.operationDuration.buckets[0]).toBe(0.01);
    expect(METRIC.operationDuration.buckets.at(-1)).toBe(81.92);
  });
});

describe('telemetry: content, when the operator opts in', () => {
  it('writes messages as the conventions do (roles and parts), and cuts a long one with a note', () => {
    const long = 'x'.repeat(CONTENT_CHARS + 10);
    const a = chatContentAttributes(
      [
        { role: 'user', text: 'read it' },
        { role: 'tool', callId: 'c1', name: 'fs.read', text: 'EPERM' },
      ],
      { text: long, toolCalls: [] },
    );
    expect(JSON.parse(String(a['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'read it' }] },
      { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c1', response: 'EPERM' }] },
    ]);
    expect(String(a['gen_ai.output.messages'])).toMatch(/… \[cut: \d+ more characters\]$/);
    expect(toolContentAttributes({ path: 'a.md' }, 'hello')).toEqual({
      'gen_ai.tool.call.arguments': '{"path":"a.md"}',
      'gen_ai.tool.call.result': 'hello',
    });
  });
});
