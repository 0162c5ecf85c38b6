/**
 * The three kinds of pain through real workflows (docs/ARCHITECTURE.md#the-error-taxonomy): transient errors are
 * retried by
 * Temporal with backoff; a tool's exhausted retries become execution pain; the LLM's own failures end
 * the task FAILED.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';

let h: Harness;
let server: http.Server;
let port: number;
let hits = 0;

beforeAll(async () => {
  h = await startHarness({ name: 'transient' });
  // A service that is always down: 503 on every request.
  server = http.createServer((_req, res) => {
    hits++;
    res.writeHead(503, { 'content-type': 'text/plain' }).end('maintenance');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await h?.stop();
  await new Promise((r) => server?.close(r));
});

async function llmActivityStarts(workflowId: string): Promise<Array<{ attempt: number; lastFailure?: string }>> {
  const history = await h.agents.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.activityTaskStartedEventAttributes)
    .map((e) => ({
      attempt: e.activityTaskStartedEventAttributes?.attempt ?? 0,
      lastFailure: e.activityTaskStartedEventAttributes?.lastFailure?.message ?? undefined,
    }));
}

describe('transient failures', () => {
  it('retries a 429 from the LLM twice with backoff, then completes with no pain injected', async () => {
    const script = writeScript([{ error: { status: 429, retryAfterMs: 200, attempts: 2 }, text: 'ok after two 429s' }]);
    const agentId = uniqueId('retry');
    const { taskId } = await h.agents.submit(agentId, {
      goal: 'say ok',
      config: scriptedConfig(script, makeWorkspace()),
    });
    const result = await h.agents.waitForTask(agentId, taskId);

    expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'ok after two 429s', ticks: 1 });
    expect(result.injections).toEqual([]);
    // One history event for the call: started on its third attempt, the 429 recorded as the last failure.
    const starts = await llmActivityStarts(result.workflowId);
    expect(starts).toHaveLength(1);
    expect(starts[0]?.attempt).toBe(3);
    expect(starts[0]?.lastFailure).toMatch(/E_RATE_LIMIT.*HTTP 429/);
  });

  it('honours a Retry-After longer than the retry policy only up to its maximum interval, for the LLM and for tools', async () => {
    // The LLM asks for an hour, and so does the HTTP service a tool calls; retry.maximumIntervalMs is 300.
    // Temporal does not bound a failure's next retry delay by the policy: without the cap this task waits an hour.
    let calls = 0;
    const slowDown = http.createServer((_req, res) => {
      calls++;
      if (calls === 1) res.writeHead(429, { 'retry-after': '3600' }).end('slow down');
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('all good');
    });
    await new Promise<void>((r) => slowDown.listen(0, '127.0.0.1', r));
    const slowPort = (slowDown.address() as AddressInfo).port;
    try {
      const script = writeScript([
        {
          error: { status: 429, retryAfterMs: 3_600_000, attempts: 1 },
          toolCalls: [{ name: 'http.get', args: { url: `http://127.0.0.1:${slowPort}/` } }],
        },
        { text: 'The service says all good.' },
      ]);
      const agentId = uniqueId('retry-cap');
      const config = scriptedConfig(script, makeWorkspace(), {
        tools: { httpAllow: [`127.0.0.1:${slowPort}`] },
        retry: { initialIntervalMs: 100, backoffCoefficient: 2, maximumIntervalMs: 300, maximumAttempts: 3 },
      });
      const { taskId } = await h.agents.submit(agentId, { goal: 'check the service', config });
      const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 });

      expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'The service says all good.' });
      expect(result.toolCalls).toEqual([expect.objectContaining({ name: 'http.get', status: 'ok' })]);
      expect(calls).toBe(2);
      const attempts = (await llmActivityStarts(result.workflowId)).map((s) => s.attempt);
      expect(attempts).toEqual([2, 2, 1]); // llm (after its 429), http.get (after its 429), llm
    } finally {
      await new Promise((r) => slowDown.close(r));
    }
  });

  it('turns a tool failure that exhausted its retries into execution pain with the retry history', async () => {
    hits = 0;
    const url = `http://127.0.0.1:${port}/status`;
    const script = writeScript([
      { toolCalls: [{ name: 'http.get', args: { url } }] },
      { text: 'The status service is down; I stopped.' },
    ]);
    const agentId = uniqueId('exhausted');
    const config = scriptedConfig(script, makeWorkspace(), {
      tools: { httpAllow: [`127.0.0.1:${port}`] },
      retry: { initialIntervalMs: 100, backoffCoefficient: 2, maximumIntervalMs: 400, maximumAttempts: 3 },
    });
    const { taskId } = await h.agents.submit(agentId, { goal: 'check the status page', config });
    const result = await h.agents.waitForTask(agentId, taskId);

    expect(result.outcome).toBe('COMPLETED');
    expect(hits).toBe(3);
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]).toMatchObject({
      name: 'http.get',
      status: 'failed',
      error: { code: 'E_UNAVAILABLE', kind: 'execution' },
    });
    expect(result.toolCalls[0]?.error?.suggestion).toMatch(/^Tried 3 times with exponential backoff/);
    expect(result.injections.map((i) => i.kind)).toEqual(['PAIN']);
    expect(result.injections[0]?.text).toContain('Tried 3 times');
  });
});

describe("the controller's own failures", () => {
  it('ends the task FAILED with the provider message when the LLM stays unavailable', async () => {
    const script = writeScript([{ error: { status: 503, message: 'the model is overloaded' } }]);
    const agentId = uniqueId('llm503');
    const config = scriptedConfig(script, makeWorkspace(), {
      retry: { initialIntervalMs: 100, backoffCoefficient: 2, maximumIntervalMs: 200, maximumAttempts: 3 },
    });
    const { taskId } = await h.agents.submit(agentId, { goal: 'anything', config });
    const result = await h.agents.waitForTask(agentId, taskId);

    expect(result).toMatchObject({
      outcome: 'FAILED',
      agentState: 'WAITING_FOR_EVENT',
      error: { code: 'E_UNAVAILABLE' },
    });
    expect(result.error?.message).toContain('the model is overloaded');
    expect(result.injections).toEqual([]);
    const describe = await h.agents.client.workflow.getHandle(result.workflowId).describe();
    expect(describe.status.name).toBe('FAILED');
  });

  it('ends the task FAILED with a clear error when the scripted controller runs out of turns', async () => {
    const script = writeScript([{ toolCalls: [{ name: 'fs.list', args: {} }] }]);
    const agentId = uniqueId('outofturns');
    const { taskId } = await h.agents.submit(agentId, {
      goal: 'list',
      config: scriptedConfig(script, makeWorkspace()),
    });
    const result = await h.agents.waitForTask(agentId, taskId);

    expect(result.outcome).toBe('FAILED');
    expect(result.error?.message).toMatch(/has 1 turn\(s\); LLM call #2 has none/);
    expect(result.toolCalls.map((c) => c.status)).toEqual(['ok']);
  });
});
