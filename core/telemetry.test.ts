import { safetyConfigSchema } from './config';
import { normalizedError, type ErrorCode } from './errors';
import type { LlmSpec } from './llm-spec';
import {
  breakerEvents,
  chatResultAttributes,
  chatSpan,
  errorType,
  llmTarget,
  painEvent,
  remoteSpan,
  taskSpanAttributes,
  toolSpan,
} from './telemetry';

const safety = safetyConfigSchema().parse({});

describe('telemetry: spans', () => {
  it('names the provider and model of every LLM spec the way the GenAI conventions do', () => {
    const specs: LlmSpec[] = [
      { provider: 'openai', model: 'gpt-4o-mini' },
      { provider: 'gemini', model: 'gemini-2.5-flash' },
      { provider: 'local', modelPath: '/m/qwen.gguf' },
      { provider: 'scripted', file: '/tmp/turns.json' },
    ];
    expect(specs.map((spec) => Object.values(llmTarget(spec)))).toEqual([
      ['openai', 'gpt-4o-mini'],
      ['gcp.gen_ai', 'gemini-2.5-flash'],
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

  it('does not count a fatal error as a breaker', () => {
    const lock = { agentState: 'ERROR_PAUSED' as const, reason: { code: 'FATAL' as const, message: 'E_AUTH' } };
    expect(breakerEvents(safety, { lock }, {})).toEqual([]);
  });
});
