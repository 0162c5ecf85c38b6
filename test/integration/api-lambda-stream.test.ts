/**
 * The HTTP API's streaming Lambda entry (api/lambda-stream.ts) as a function URL with response
 * streaming runs it: invoked in-process with function URL events, through the Node.js runtime's
 * streaming contract (test/helpers/awslambda.ts), against the real dev server and a real worker.
 */
import { stream } from 'hono/streaming';
import { eventually } from '../../dev/poll';
import { createApp } from '../../api/app';
import { authenticator, devToken, type Role } from '../../api/auth';
import { functionUrlEvent, installAwsLambdaGlobal, invokeStreaming } from '../helpers/awslambda';
import {
  address,
  makeWorkspace,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';

jest.setTimeout(180_000);

const SECRET = 'test-secret-that-is-at-least-32-characters-long';
const token = (role: Role) => devToken({ secret: SECRET, sub: `${role}-user`, roles: [role] });
let h: Harness;
let lambda: typeof import('../../api/lambda-stream');
const saved = { ...process.env };

beforeAll(async () => {
  h = await startHarness({ name: 'api-lambda-stream' });
  Object.assign(process.env, {
    TEMPORAL_ADDRESS: address(),
    STARRY_TASK_QUEUE: h.taskQueue,
    STARRY_API_JWT_SECRET: SECRET,
  });
  installAwsLambdaGlobal();
  lambda = await import('../../api/lambda-stream');
});
afterAll(async () => {
  process.env = saved;
  await h?.stop();
});

describe('the streaming Lambda handler behind a function URL', () => {
  it('answers a request without a token 401 problem+json: status and headers in the prelude, then the body', async () => {
    const res = await invokeStreaming(lambda.handler, functionUrlEvent('GET', '/v1/agents/a1')).done;
    expect(res.contentType).toBe('application/vnd.awslambda.http-integration-response');
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(res.body)).toMatchObject({ status: 401 });
  });

  it('serves the same app: GET /openapi.json is its OpenAPI document', async () => {
    const res = await invokeStreaming(lambda.handler, functionUrlEvent('GET', '/openapi.json')).done;
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const doc = JSON.parse(res.body) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toMatch(/^3\.1/);
    expect(doc.paths).toHaveProperty('/v1/agents/{agentId}');
  });

  it('runs a task and reads its agent with the bearer JWT, and frees the container once each response ends though its Temporal connection stays open', async () => {
    const agentId = uniqueId('api-stream');
    const config = scriptedConfig(
      writeScript([{ text: 'Done.', usage: { inputTokens: 10, outputTokens: 5 } }]),
      makeWorkspace({ 'notes.md': 'hi\n' }),
    );
    const submitted = await invokeStreaming(
      lambda.handler,
      functionUrlEvent('POST', `/v1/agents/${agentId}/tasks`, {
        query: 'wait=60',
        headers: { authorization: `Bearer ${await token('operator')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ goal: 'via the function URL', config }),
      }),
    ).done;
    expect([submitted.statusCode, JSON.parse(submitted.body)]).toEqual([
      200,
      expect.objectContaining({ agentId, outcome: 'COMPLETED' }),
    ]);
    const status = await invokeStreaming(
      lambda.handler,
      functionUrlEvent('GET', `/v1/agents/${agentId}`, {
        headers: { authorization: `Bearer ${await token('viewer')}` },
      }),
    ).done;
    expect(status.statusCode).toBe(200);
    expect(JSON.parse(status.body)).toMatchObject({ agentId, agentState: 'WAITING_FOR_EVENT' });
    // Left true, the runtime would take no next invocation while the connection is open: each would
    // run on to the function's timeout.
    expect([submitted.waitsForEmptyEventLoop, status.waitsForEmptyEventLoop]).toEqual([false, false]);
  });

  it('writes a body to the caller as the app writes it: the first chunk arrives while the handler still runs', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const app = createApp({ agents: async () => h.agents, auth: authenticator({ secret: SECRET }) });
    app.get('/ticks', (c) =>
      stream(c, async (s) => {
        await s.write('first\n');
        await gate;
        await s.write('second\n');
      }),
    );
    const invocation = invokeStreaming(
      lambda.streamingHandler(async () => app),
      functionUrlEvent('GET', '/ticks'),
    );
    const early = await invocation.arrived(/first/);
    expect([early.statusCode, early.body]).toEqual([200, 'first\n']);
    release();
    const res = await invocation.done;
    expect(res.body).toBe('first\nsecond\n');
    expect(res.chunks).toEqual(['first\n', 'second\n']);
  });

  it("streams a task's events as they happen, and ends a stream before the invocation times out, resumable", async () => {
    const agentId = uniqueId('api-stream-events');
    const config = scriptedConfig(
      writeScript([{ toolCalls: [{ name: 'fs.read', args: { path: 'notes.md' } }] }, { text: 'Done.' }]),
      makeWorkspace({ 'notes.md': 'hi\n' }),
      { tools: { approval: { ask: ['fs.read'] } } },
    );
    const { workflowId } = await h.agents.submit(agentId, { goal: 'read, once approved', config });
    const viewer = { authorization: `Bearer ${await token('viewer')}` };
    const events = (path: string, headers: Record<string, string> = {}, timeoutMs?: number) =>
      invokeStreaming(
        lambda.handler,
        functionUrlEvent('GET', path, { query: 'from=0', headers: { ...viewer, ...headers } }),
        timeoutMs ? { timeoutMs } : {},
      );

    // A function with 6 s left ends its stream 5 s early, with a retryable error, while the task waits
    // (for its approval: on a loaded machine the task may take longer than the stream's 1 s to get there).
    await eventually('the read waiting for approval', async () => (await h.agents.approvals(agentId)).approvals[0]);
    const cut = await events(`/v1/tasks/${workflowId}/events`, {}, 6_000).done;
    expect(cut.statusCode).toBe(200);
    expect(cut.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(cut.body).toMatch(/event: approval\n/);
    expect(cut.body).toMatch(
      /event: error\ndata: \{"message":"this stream reached its time limit on this host.*"retryable":true\}/,
    );
    const lastId = [...cut.body.matchAll(/^id: (.*)$/gm)].at(-1)![1]!;

    // Resumed with Last-Event-ID in a new invocation: the events come as they happen, to the end.
    const resumed = events(`/v1/tasks/${workflowId}/events`, { 'last-event-id': lastId });
    await h.agents.decide(agentId, { callId: 't1.0', decision: 'approve', by: 'ana' });
    const early = await resumed.arrived(/event: tool\n/);
    expect(early.body).not.toMatch(/event: end/);
    const rest = await resumed.done;
    // Exactly what followed: not the waiting call again, then the decision.
    expect(rest.body).not.toMatch(/event: approval\nid: .*\ndata: \{"agentId"/);
    expect(rest.body).toMatch(/event: approval\nid: .*\ndata: \{"decided"/);
    expect(rest.body).toMatch(/event: end\n.*\ndata: \{"workflowId":"[^"]+","status":"completed"/);
  });

  it('refuses to load outside the Lambda runtime, saying the awslambda global is missing and what to run instead', async () => {
    const runtime = globalThis.awslambda;
    try {
      delete globalThis.awslambda;
      await jest.isolateModulesAsync(async () => {
        await expect(import('../../api/lambda-stream')).rejects.toThrow(
          /awslambda global is missing.*AWS Lambda Node\.js runtime.*`starry api`/,
        );
      });
    } finally {
      globalThis.awslambda = runtime;
    }
  });
});
