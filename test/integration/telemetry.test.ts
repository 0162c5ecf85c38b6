/**
 * Traces (workers/otel.ts, workflows/telemetry.ts): a worker pointed at a collector (here an in-test
 * OTLP/HTTP server decoding the real protobuf) sends one trace per task, with the GenAI conventions'
 * spans and the pain and breaker facts as span events; a replay sends nothing; an unreachable collector
 * does not fail the task, and says so once.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { projectRoot } from '../../dev/paths';
import { eventually } from '../../dev/poll';
import { freePort } from '../../dev/dev-server';
import { startTracing } from '../../workers/otel';
import { createApp } from '../../api/app';
import { authenticator, devToken } from '../../api/auth';
import { formatStatus } from '../../cli/format';
import type { TaskConfig } from '../../core/config';
import {
  address,
  makeWorkspace,
  scriptedConfig,
  startEarlyContinueServer,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { startOtlpReceiver, traceOf, tracingTo, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver';
import {
  done,
  LIST,
  runScenario,
  SCENARIOS,
  times,
  USAGE,
  WORKSPACE_FILES,
  type ScenarioRun,
} from '../helpers/scenarios';

const child = (spans: ReceivedSpan[], parent: ReceivedSpan) => spans.filter((s) => s.parentSpanId === parent.spanId);

let receiver: OtlpReceiver;
let h: Harness;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
  h = await startHarness({ name: 'otel', tracing: tracingTo(receiver.url) });
});
afterAll(async () => {
  await h?.stop();
  await receiver?.close();
});

describe('a traced worker', () => {
  let eperm: ScenarioRun;
  let spans: ReceivedSpan[];
  beforeAll(async () => {
    eperm = await runScenario(h, SCENARIOS.eperm);
    spans = await traceOf(receiver, eperm);
  });

  it('sends the EPERM task as one trace: the task span, a chat span per LLM call and an execute_tool span per tool call, each attempt beneath', () => {
    expect(eperm.result.outcome).toBe('COMPLETED');
    const [task, ...others] = spans.filter((s) => s.name === 'invoke_agent');
    expect(others).toEqual([]);
    expect(task!.parentSpanId).toBeUndefined();
    expect(task!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': eperm.agentId,
      'starry.task.id': eperm.taskId,
      'starry.goal.length': SCENARIOS.eperm.goal.length,
      'starry.task.outcome': 'COMPLETED',
      'temporal.workflow.id': eperm.workflowId,
    });
    expect(task!.resource['service.name']).toBe('openstarry-test');

    const chats = child(spans, task!).filter((s) => s.name.startsWith('chat '));
    // One per tick: the scripted model's four turns.
    expect(chats).toHaveLength(4);
    for (const chat of chats) {
      expect(chat.name).toBe('chat turns.json');
      expect(chat.kind).toBe(3); // CLIENT
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openstarry.scripted',
        'gen_ai.request.model': 'turns.json',
      });
      expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      expect(child(spans, chat).map((s) => s.name)).toEqual(['RunActivity:llm']);
    }
    expect(chats.map((c) => c.attributes['gen_ai.response.finish_reasons'])).toEqual([
      ['tool_calls'],
      ['tool_calls'],
      ['tool_calls'],
      ['stop'],
    ]);

    const tools = child(spans, task!).filter((s) => s.name.startsWith('execute_tool '));
    expect(tools.map((t) => [t.name, t.attributes['error.type'], t.status])).toEqual([
      ['execute_tool fs.read', 'EPERM', 2],
      ['execute_tool fs.list', undefined, 0],
      ['execute_tool fs.read', undefined, 0],
    ]);
    for (const t of tools) expect(child(spans, t).map((s) => s.name)).toEqual(['RunActivity:tool']);
  });

  it('feels the EPERM as a starry.pain event on the failed call, graded critical', () => {
    const failed = spans.find((s) => s.attributes['error.type'] === 'EPERM');
    expect(failed?.events).toEqual([
      {
        name: 'starry.pain',
        time: expect.any(Number),
        attributes: {
          'starry.pain.code': 'EPERM',
          'starry.pain.kind': 'execution',
          'starry.pain.level': 3,
          'starry.pain.source': 'fs.read',
          'starry.pain.consecutive_failures': 1,
          'starry.tick': 1,
        },
      },
    ]);
  });

  it('carries no goal, prompt, answer or tool output (an error message is kept: it says what failed)', () => {
    const text = JSON.stringify(spans);
    expect(text).not.toContain(SCENARIOS.eperm.goal);
    expect(text).not.toContain('agents work only inside'); // the file the agent read
    expect(text).not.toContain(eperm.result.finalText!.slice(0, 30));
  });

  it("shows the trace id in the task's Web UI details", async () => {
    const traceId = spans[0]!.traceId;
    const meta = await h.agents.client.workflow
      .getHandle(eperm.workflowId)
      .query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(meta.currentDetails).toContain(`trace \`${traceId}\``);
  });

  it("names its trace in the task's result, as the agent's status lists it", async () => {
    const traceId = spans[0]!.traceId;
    expect(eperm.result.traceId).toBe(traceId);
    const status = await h.agents.status(eperm.agentId);
    expect(status.tasks.find((t) => t.taskId === eperm.taskId)?.traceId).toBe(traceId);
  });

  it('sends nothing when the history is replayed, by a replayer tracing to a collector', async () => {
    const other = await startOtlpReceiver();
    try {
      const tracing = startTracing(tracingTo(other.url), () => undefined);
      const history = await h.agents.client.workflow.getHandle(eperm.workflowId).fetchHistory();
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: process.env.STARRY_WORKFLOW_BUNDLE! }, sinks: tracing.sinks },
        history,
        eperm.workflowId,
      );
      await tracing.shutdown();
      expect(other.spans).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('marks a breaker with a starry.breaker event on the task span: the repeat alert, then the lockout', async () => {
    const run = await runScenario(h, SCENARIOS.repeatLockout);
    expect(run.result.outcome).toBe('SUSPENDED');
    const trace = await traceOf(receiver, run);
    const task = trace.find((s) => s.name === 'invoke_agent')!;
    expect(task.attributes).toMatchObject({
      'starry.task.outcome': 'SUSPENDED',
      'starry.task.reason': 'REPEATED_FAILURE',
    });
    expect(task.events.filter((e) => e.name === 'starry.breaker').map((e) => e.attributes)).toEqual([
      {
        'starry.breaker.rung': 'REPEAT_ALERT',
        'starry.breaker.count': 3,
        'starry.breaker.threshold': 3,
        'starry.breaker.state': 'alerted',
      },
      {
        'starry.breaker.rung': 'REPEATED_FAILURE',
        'starry.breaker.count': 4,
        'starry.breaker.threshold': 3,
        'starry.breaker.state': 'SAFETY_LOCKOUT',
      },
    ]);
  });
});

describe("a running traced task's trace id", () => {
  it('is in the agent status (`starry status --json`) while the task waits, and is the trace its spans end in', async () => {
    const agentId = uniqueId('otel-running');
    const write = { toolCalls: [{ name: 'fs.write', args: { path: 'a.md', content: 'x' } }], usage: USAGE };
    const config = scriptedConfig(writeScript([write, done()]), makeWorkspace(WORKSPACE_FILES), {
      tools: { approval: { ask: ['fs.write'] } },
    });
    const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'write a file', config });
    const waiting = await eventually('the call waiting for approval', async () =>
      (await h.agents.status(agentId)).approvals?.length ? h.agents.status(agentId) : undefined,
    );
    const traceId = waiting.currentTask?.traceId;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(formatStatus(waiting)).toContain(`trace ${traceId}`);
    await h.agents.decide(agentId, { callId: 't1.0', decision: 'approve', by: 'alice' });
    const result = await h.agents.waitForTask(agentId, taskId);
    expect(result.traceId).toBe(traceId);
    const trace = await traceOf(receiver, { agentId, taskId, workflowId, result, config, workspace: '' });
    expect(new Set(trace.map((s) => s.traceId))).toEqual(new Set([traceId]));
  });
});

describe("a submitter's trace context (traceparent)", () => {
  const CALLER = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
  const traceparent = `00-${CALLER.traceId}-${CALLER.spanId}-01`;

  /** A one-tick task through `submit`, and the links of its trace's root span. */
  async function rootLinks(submit: (agentId: string, config: TaskConfig) => Promise<{ taskId: string }>) {
    const agentId = uniqueId('otel-caller');
    const config = scriptedConfig(writeScript([done()]), makeWorkspace(WORKSPACE_FILES));
    const { taskId } = await submit(agentId, config);
    const result = await h.agents.waitForTask(agentId, taskId);
    const run = { agentId, taskId, workflowId: result.workflowId, result, config, workspace: '' };
    return (await traceOf(receiver, run)).find((s) => s.name === 'invoke_agent')!.links;
  }

  it("links the task's span to the span a library caller names", async () => {
    const links = await rootLinks((agentId, config) =>
      h.agents.submit(agentId, { goal: 'say done', config, traceparent }),
    );
    expect(links).toEqual([CALLER]);
  });

  it('links to the HTTP caller’s traceparent header, and ignores a malformed one (the task runs unlinked)', async () => {
    const secret = 'test-secret-that-is-at-least-32-characters-long';
    const app = createApp({ agents: async () => h.agents, auth: authenticator({ secret }) });
    const bearer = `Bearer ${await devToken({ secret, sub: 'ops', roles: ['operator'] })}`;
    const post = (header: string) => async (agentId: string, config: TaskConfig) => {
      const res = await app.request(`/v1/agents/${agentId}/tasks`, {
        method: 'POST',
        headers: { authorization: bearer, 'content-type': 'application/json', traceparent: header },
        body: JSON.stringify({ goal: 'say done', config }),
      });
      expect(res.status).toBe(202);
      return (await res.json()) as { taskId: string };
    };
    expect(await rootLinks(post(traceparent))).toEqual([CALLER]);
    expect(await rootLinks(post(`00-${'0'.repeat(32)}-${CALLER.spanId}-01`))).toEqual([]);
  });

  it('links to the TRACEPARENT a `starry run` was given', async () => {
    const links = await rootLinks(async (agentId) => {
      const script = writeScript([done()]);
      const cli = spawn(
        process.execPath,
        [
          ...[path.join(projectRoot(), 'bin', 'starry.js'), 'run', 'say done', '--agent', agentId],
          ...['--llm', `scripted:${script}`, '--workspace', makeWorkspace(WORKSPACE_FILES)],
        ],
        {
          env: {
            ...process.env,
            TEMPORAL_ADDRESS: address(),
            STARRY_TASK_QUEUE: h.taskQueue,
            TRACEPARENT: traceparent,
          },
          stdio: 'ignore',
        },
      );
      expect(await new Promise((resolve) => cli.on('exit', resolve))).toBe(0);
      return { taskId: 'task-1' };
    });
    expect(links).toEqual([CALLER]);
  });

  it('is refused by the library when malformed, saying the form', async () => {
    const config = scriptedConfig(writeScript([done()]), makeWorkspace(WORKSPACE_FILES));
    await expect(
      h.agents.submit(uniqueId('otel-bad'), { goal: 'say done', config, traceparent: '4bf92f35-01' }),
    ).rejects.toThrow('traceparent must be a W3C trace context: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>');
  });
});

describe('a worker whose collector is unreachable', () => {
  it('completes the task and logs the failed export once', async () => {
    const logged: string[] = [];
    const closed = `http://127.0.0.1:${await freePort()}`;
    const unreachable = await startHarness({
      name: 'otel-unreachable',
      tracing: tracingTo(closed),
      tracingLog: (line) => logged.push(line),
    });
    let run: ScenarioRun;
    try {
      run = await runScenario(unreachable, SCENARIOS.eperm);
    } finally {
      await unreachable.stop();
    }
    expect(run.result.outcome).toBe('COMPLETED');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain(`could not export to ${closed}/v1/traces`);
    expect(logged[0]).toContain('Tasks are not affected');
  });
});

describe('a traced task that continues as new', () => {
  it('stays one trace: each run its own invoke_agent span, the next a child of the one before, which notes the move', async () => {
    const server = await startEarlyContinueServer('otel-can', 60);
    const own = await startOtlpReceiver();
    const long = await startHarness({ name: 'otel-can', address: server.address, tracing: tracingTo(own.url) });
    try {
      const run = await runScenario(long, {
        name: 'otel-can',
        goal: 'List, many times.',
        turns: [...times(12, LIST), done()],
      });
      expect(run.result).toMatchObject({ outcome: 'COMPLETED', ticks: 13 });
      const spans = await traceOf(own, run);
      const runs = spans.filter((s) => s.name === 'invoke_agent');
      expect(runs.length).toBeGreaterThan(1);
      expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([run.result.traceId]));
      expect(runs.filter((s) => !s.parentSpanId)).toHaveLength(1);
      const moved = runs.filter((s) => s.events.some((e) => e.name === 'starry.continue_as_new'));
      expect(moved).toHaveLength(runs.length - 1);
      expect(spans.filter((s) => s.name === 'execute_tool fs.list')).toHaveLength(12);
    } finally {
      await long.stop();
      await own.close();
      await server.stop();
    }
  });
});
