/**
 * The HTTP API as its callers meet it: the app on a real port, against the real dev server and a real
 * worker; tokens signed like an issuer signs them. Every route end to end, every role against every
 * route, a corpus of bad input, the OpenAPI document validated and used by a typed client, and the
 * Lambda handler invoked with API Gateway v2 events.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { validate } from '@readme/openapi-parser';
import { SignJWT } from 'jose';
import createClient from 'openapi-fetch';
import { createApp } from '../../api/app';
import { authenticator, devToken, type Role } from '../../api/auth';
import type { paths } from '../../api/openapi';
import {
  address,
  makeWorkspace,
  scriptedConfig,
  startHarness,
  tenantDir,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { activityRunning, isActivityRunning } from '../helpers/workflow-history';
import { eventually } from '../../dev/poll';
import { startMoto } from '../helpers/moto';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { taskWorkflowId } from '../../workflows/messages';
import { TenantKey } from '../../workflows/search-attributes';
import { AgentClient } from '../../client/agent-client';
import { projectRoot } from '../../dev/paths';
import { expectWarnings } from '../helpers/expected-logs';

jest.setTimeout(180_000);
// "Who may do what" sends a message right after submitting a task whose script ends at once: the agent
// may forward it to a task that has just ended, and says so.
expectWarnings(/^could not signal the running task/);

const SECRET = 'test-secret-that-is-at-least-32-characters-long';
let h: Harness;
let server: ServerType;
let base: string;

/** The app on a free port of 127.0.0.1. */
async function listen(app: ReturnType<typeof createApp>): Promise<{ server: ServerType; base: string }> {
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const address = server.address();
  return { server, base: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
}

beforeAll(async () => {
  h = await startHarness({ name: 'api' });
  ({ server, base } = await listen(
    createApp({ agents: async () => h.agents, auth: authenticator({ secret: SECRET }) }),
  ));
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await h?.stop();
});

const token = (role: Role, sub = `${role}-user`) => devToken({ secret: SECRET, sub, roles: [role] });
const DONE = { text: 'Done.', usage: { inputTokens: 10, outputTokens: 5 } };
const config = (turns: unknown[] = [DONE]) => scriptedConfig(writeScript(turns), makeWorkspace({ 'notes.md': 'hi\n' }));

async function call(
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string>; base?: string } = {},
) {
  const res = await fetch(`${opts.base ?? base}${path}`, {
    method,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined || opts.raw !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    ...(opts.raw !== undefined
      ? { body: opts.raw }
      : opts.body !== undefined
        ? { body: JSON.stringify(opts.body) }
        : {}),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json: json as Record<string, unknown>, headers: res.headers };
}

describe('every route end to end', () => {
  it('submits a task that completes, waits for it, and reads the agent, the task and the list', async () => {
    const agentId = uniqueId('api-e2e');
    const op = await token('operator');
    const viewer = await token('viewer');

    const waited = await call('POST', `/v1/agents/${agentId}/tasks?wait=60`, {
      token: op,
      body: { goal: 'say done', config: config() },
    });
    expect(waited.status).toBe(200);
    expect(waited.json).toMatchObject({ agentId, taskId: 'task-1', outcome: 'COMPLETED', finalText: 'Done.' });

    const queued = await call('POST', `/v1/agents/${agentId}/tasks`, {
      token: op,
      body: { goal: 'again, with the agent config' },
    });
    expect(queued.status).toBe(202);
    expect(queued.json).toMatchObject({ taskId: 'task-2', workflowId: `agent-${agentId}-task-2` });
    expect(queued.headers.get('location')).toBe(`/v1/tasks/agent-${agentId}-task-2`);
    await h.agents.waitForTask(agentId, 'task-2');

    const task = await call('GET', `/v1/tasks/agent-${agentId}-task-2`, { token: viewer });
    expect(task).toMatchObject({ status: 200, json: { taskId: 'task-2', outcome: 'COMPLETED' } });
    const agent = await call('GET', `/v1/agents/${agentId}`, { token: viewer });
    expect(agent).toMatchObject({ status: 200, json: { agentId, agentState: 'WAITING_FOR_EVENT' } });
    expect((agent.json.tasks as unknown[]).length).toBe(2);

    const message = await call('POST', `/v1/agents/${agentId}/messages`, {
      token: op,
      body: { text: 'for the next task' },
    });
    expect(message).toMatchObject({ status: 200, json: { delivered: 'next task' } });

    // The visibility store is eventually consistent: the agent shows up in the list within moments.
    let listed: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && !listed; i++) {
      const page = await call('GET', '/v1/agents?state=WAITING_FOR_EVENT&pageSize=200', { token: viewer });
      expect(page.status).toBe(200);
      listed = (page.json.agents as Record<string, unknown>[]).find((a) => a.agentId === agentId);
      if (!listed) await new Promise((r) => setTimeout(r, 100));
    }
    expect(listed).toMatchObject({ agentId, workflowId: `agent-${agentId}`, agentState: 'WAITING_FOR_EVENT' });
    expect(
      (await call('GET', '/v1/agents?state=SAFETY_LOCKOUT&pageSize=200', { token: viewer })).json.agents,
    ).not.toContainEqual(expect.objectContaining({ agentId }));
  });

  it('refuses with 409 a task config wider than the worker policy, naming the field, and queues nothing', async () => {
    const agentId = uniqueId('api-wider');
    const op = await token('operator');
    const wide = { ...config(), tools: { shellAllow: ['ls', 'sh'], httpAllow: [], maxOutputBytes: 1000 } };
    const refused = await call('POST', `/v1/agents/${agentId}/tasks`, {
      token: op,
      body: { goal: 'read the worker env', config: wide },
    });
    expect(refused.status).toBe(409);
    expect(refused.json.detail).toMatch(/tools.shellAllow: 'sh' not allowed by the worker/);
    // The agent the submit started ended with the refusal: there is no agent.
    expect((await call('GET', `/v1/agents/${agentId}`, { token: await token('viewer') })).status).toBe(404);
  });

  it('answers a submit sent again with the same Idempotency-Key as the first, and runs it once', async () => {
    const agentId = uniqueId('api-idem');
    const op = await token('operator');
    const body = { goal: 'once', config: config() };
    const headers = { 'idempotency-key': uniqueId('key') };
    const first = await call('POST', `/v1/agents/${agentId}/tasks`, { token: op, body, headers });
    expect(first.status).toBe(202);
    const again = await call('POST', `/v1/agents/${agentId}/tasks?wait=60`, { token: op, body, headers });
    expect(again).toMatchObject({ status: 200, json: { taskId: first.json.taskId, outcome: 'COMPLETED' } });
    expect((await h.agents.status(agentId)).tasks.map((t) => t.taskId)).toEqual([first.json.taskId]);
    const bad = await call('POST', `/v1/agents/${agentId}/tasks`, {
      token: op,
      body,
      headers: { 'idempotency-key': 'not a key' },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toMatch(/idempotency key must be 1-255 visible ASCII characters/);
  });

  it('halts an agent with a task in flight, records who, refuses a second unlock with 409, and resumes after unlock', async () => {
    const agentId = uniqueId('api-halt');
    const op = await token('operator', 'alice');
    const admin = await token('admin', 'bob');
    const submitted = await call('POST', `/v1/agents/${agentId}/tasks`, {
      token: op,
      body: { goal: 'slow', config: config([{ delayMs: 60_000, text: 'slow' }]) },
    });
    expect(submitted.status).toBe(202);
    await activityRunning(h.agents.client, taskWorkflowId(agentId, 'task-1'), 'llm');

    const halted = await call('POST', `/v1/agents/${agentId}/halt`, { token: op, body: { reason: 'drill' } });
    expect(halted).toMatchObject({ status: 202, json: { halted: true, agentId } });
    const s = await h.agents.status(agentId);
    expect(s).toMatchObject({
      agentState: 'STOPPED',
      reason: { code: 'SYSTEM_HALT', message: 'SYSTEM_HALT by alice: drill' },
    });
    expect((await h.agents.waitForTask(agentId, 'task-1')).outcome).toBe('CANCELLED');

    const refused = await call('POST', `/v1/agents/${agentId}/tasks`, {
      token: op,
      body: { goal: 'refused while stopped' },
    });
    expect(refused.status).toBe(409);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(refused.json.detail).toMatch(/is STOPPED .*starry unlock/);

    const unlocked = await call('POST', `/v1/agents/${agentId}/unlock`, {
      token: admin,
      body: { note: 'drill over', addTokens: 100 },
    });
    expect(unlocked).toMatchObject({ status: 200, json: { unlocked: true, agentState: 'WAITING_FOR_EVENT' } });
    expect((await h.agents.status(agentId)).unlocks.at(-1)).toMatchObject({ by: 'bob', note: 'drill over' });
    const again = await call('POST', `/v1/agents/${agentId}/unlock`, { token: admin });
    expect(again.status).toBe(409);
    expect(again.json.detail).toMatch(/is not locked \(WAITING_FOR_EVENT\): nothing to unlock/);

    const next = await call('POST', `/v1/agents/${agentId}/tasks?wait=60`, {
      token: op,
      body: { goal: 'runs again', config: config() },
    });
    expect(next).toMatchObject({ status: 200, json: { outcome: 'COMPLETED' } });
  });

  it("answers a halted task's result with 200: the CANCELLED TaskResult, with what it ran", async () => {
    const agentId = uniqueId('api-halted');
    const op = await token('operator');
    const turns = [{ toolCalls: [{ name: 'fs.list', args: {} }] }, { delayMs: 60_000, text: 'never' }];
    const submitted = await call('POST', `/v1/agents/${agentId}/tasks`, {
      token: op,
      body: { goal: 'list, then think long', config: config(turns) },
    });
    expect(submitted.status).toBe(202);
    const workflowId = taskWorkflowId(agentId, 'task-1');
    await eventually('the second LLM call in flight', async () =>
      (await h.agents.status(agentId)).currentTask?.tick === 2 &&
      (await isActivityRunning(h.agents.client, workflowId, 'llm'))
        ? true
        : undefined,
    );
    expect((await call('POST', `/v1/agents/${agentId}/halt`, { token: op, body: { reason: 'drill' } })).status).toBe(
      202,
    );
    await h.agents.waitForTask(agentId, 'task-1');

    const task = await call('GET', `/v1/tasks/${workflowId}`, { token: await token('viewer') });
    expect(task.status).toBe(200);
    expect(task.json).toMatchObject({
      agentId,
      taskId: 'task-1',
      workflowId,
      outcome: 'CANCELLED',
      agentState: 'STOPPED',
      reason: { code: 'SYSTEM_HALT' },
    });
    expect(task.json.toolCalls).toEqual([expect.objectContaining({ name: 'fs.list', status: 'ok' })]);
  });

  it('lists a call that waits for approval, and lets an approver decide it once: 404 unknown call, 400 bad args, 409 decided already', async () => {
    const agentId = uniqueId('api-approve');
    const write = { toolCalls: [{ name: 'fs.write', args: { path: 'a.md', content: 'x' } }] };
    const cfg = scriptedConfig(writeScript([write, DONE]), makeWorkspace(), {
      tools: { approval: { ask: ['fs.write'] } },
    });
    const { taskId } = await h.agents.submit(agentId, { goal: 'write', config: cfg });
    const viewer = await token('viewer');
    const listed = await eventually('the waiting call over HTTP', async () => {
      const r = await call('GET', `/v1/approvals?agentId=${agentId}`, { token: viewer });
      return (r.json.approvals as unknown[] | undefined)?.length ? r : undefined;
    });
    expect(listed.json.approvals).toEqual([
      expect.objectContaining({ agentId, callId: 't1.0', tool: 'fs.write', args: { path: 'a.md', content: 'x' } }),
    ]);
    const all = await call('GET', '/v1/approvals', { token: viewer });
    expect(all.status).toBe(200);

    const approver = await token('approver', 'grace');
    const path = `/v1/agents/${agentId}/approvals`;
    expect(await call('POST', `${path}/t9.0`, { token: approver, body: { decision: 'approve' } })).toMatchObject({
      status: 404,
      json: { detail: expect.stringMatching(/no call t9\.0 .* waits for approval/) },
    });
    expect(
      await call('POST', `${path}/t1.0`, { token: approver, body: { decision: 'approve', args: { path: 1 } } }),
    ).toMatchObject({ status: 400, json: { detail: expect.stringMatching(/do not fit fs\.write/) } });
    expect(
      await call('POST', `${path}/t1.0`, {
        token: approver,
        body: { decision: 'deny', reason: 'x'.repeat(1_000_000) },
      }),
    ).toMatchObject({ status: 400, json: { errors: ['reason: reason must be at most 2000 characters'] } });
    const decided = await call('POST', `${path}/t1.0`, { token: approver, body: { decision: 'deny', reason: 'no' } });
    expect(decided).toMatchObject({
      status: 200,
      json: { callId: 't1.0', decision: 'deny', by: 'grace', reason: 'no' },
    });
    expect(await call('POST', `${path}/t1.0`, { token: approver, body: { decision: 'approve' } })).toMatchObject({
      status: 409,
      json: { detail: expect.stringMatching(/decided already: denied by grace/) },
    });
    const r = await h.agents.waitForTask(agentId, taskId);
    expect(r.toolCalls[0]).toMatchObject({
      error: { code: 'E_DENIED', message: 'grace denied this fs.write call: no' },
    });
  });

  it('answers /healthz and /openapi.json without a token', async () => {
    expect(await call('GET', '/healthz')).toMatchObject({ status: 200, json: { ok: true, temporal: 'reachable' } });
    expect((await call('GET', '/openapi.json')).json).toMatchObject({ openapi: '3.1.0' });
  });
});

describe('only admins loosen limits', () => {
  const USAGE = { inputTokens: 10, outputTokens: 5 };
  /** A task config of its own script (a tool call, then an answer: two LLM calls of 15 tokens), and `over`. */
  const own = (over: Record<string, unknown> = {}) => ({
    llm: `scripted:${writeScript([
      { toolCalls: [{ name: 'fs.list', args: {} }], usage: USAGE },
      { text: 'Done.', usage: USAGE },
    ])}`,
    workspace: [makeWorkspace()],
    verify: false,
    ...over,
  });

  it("refuses an operator's task that raises the budget with 403 naming it; a task without safety runs with the agent's budget, a tighter one with its own", async () => {
    const agentId = uniqueId('api-limits');
    const op = await token('operator');
    const admin = await token('admin', 'alice');
    // The first task sets the agent's limits: a budget of 20 tokens.
    const first = await call('POST', `/v1/agents/${agentId}/tasks?wait=60`, {
      token: op,
      body: { goal: 'say done', config: { ...config(), safety: { tokenBudget: 20 } } },
    });
    expect(first.json).toMatchObject({ outcome: 'COMPLETED', tokensUsed: 15 });

    const raised = await call('POST', `/v1/agents/${agentId}/tasks`, {
      token: op,
      body: { goal: 'spend more', config: own({ safety: { tokenBudget: 1_000_000_000, maxTicks: 10 } }) },
    });
    expect(raised.status).toBe(403);
    expect(raised.headers.get('content-type')).toBe('application/problem+json');
    expect(raised.json.detail).toMatch(/raising tokenBudget needs admin/);
    expect(raised.json.errors).toEqual([
      `safety.tokenBudget: 1000000000 is looser than agent ${agentId}'s limit 20; raising tokenBudget needs admin`,
    ]);
    expect((await h.agents.status(agentId)).queue).toEqual([]);

    // No safety in its config: the agent's budget of 20, not the default 100,000 (its second LLM call stops).
    const inherits = await call('POST', `/v1/agents/${agentId}/tasks?wait=60`, {
      token: op,
      body: { goal: 'list, then answer', config: own() },
    });
    expect(inherits.json).toMatchObject({
      agentState: 'STOPPED',
      reason: { code: 'BUDGET_EXHAUSTED', message: 'Token budget exhausted: 30 tokens used of a budget of 20' },
    });

    const patched = await call('PATCH', `/v1/agents/${agentId}/limits`, {
      token: admin,
      body: { safety: { tokenBudget: 1000 }, note: 'more for the report' },
    });
    expect(patched).toMatchObject({
      status: 200,
      json: { changed: ['tokenBudget'], limits: { tokenBudget: 1000, maxTicks: 50 } },
    });
    await call('POST', `/v1/agents/${agentId}/unlock`, { token: admin });

    // Tighter than the agent's 1,000: the task runs with its own 40 (30 used by now, 45 after one call).
    const tighter = await call('POST', `/v1/agents/${agentId}/tasks?wait=60`, {
      token: op,
      body: { goal: 'list, then answer', config: own({ safety: { tokenBudget: 40 } }) },
    });
    expect(tighter.json).toMatchObject({
      reason: { code: 'BUDGET_EXHAUSTED', message: 'Token budget exhausted: 45 tokens used of a budget of 40' },
    });
    const status = await h.agents.status(agentId);
    expect(status).toMatchObject({ tokenBudget: 1000, limits: { tokenBudget: 1000 } });
    expect(status.limitChanges).toEqual([
      { by: 'alice', note: 'more for the report', from: { tokenBudget: 20 }, to: { tokenBudget: 1000 } },
    ]);
  });

  it('refuses a limits change by an operator (403) and bad limits (400, named), and answers an unknown agent 404', async () => {
    const agentId = uniqueId('api-limits-bad');
    await h.agents.waitForTask(agentId, (await h.agents.submit(agentId, { goal: 'exists', config: config() })).taskId);
    const op = await token('operator');
    const admin = await token('admin');
    const byOperator = await call('PATCH', `/v1/agents/${agentId}/limits`, {
      token: op,
      body: { safety: { tokenBudget: 1_000_000_000 } },
    });
    expect(byOperator).toMatchObject({
      status: 403,
      json: { detail: 'limits needs the admin role; this token has operator' },
    });
    const bad = async (body: unknown) =>
      (await call('PATCH', `/v1/agents/${agentId}/limits`, { token: admin, body })).json;
    expect(await bad({ safety: { tokenBudgett: 5 } })).toMatchObject({
      status: 400,
      errors: ['safety: Unrecognized key: "tokenBudgett"'],
    });
    expect(await bad({ safety: { maxTicks: 'many' } })).toMatchObject({
      status: 400,
      errors: ['safety.maxTicks: must be a number'],
    });
    expect(await bad({ safety: { maxTicks: 100_001 } })).toMatchObject({
      status: 400,
      errors: ['safety.maxTicks: must be <= 100000'],
    });
    expect(await bad({ safety: {} })).toMatchObject({
      status: 400,
      errors: ['safety: give at least one limit to change: a safety field, approval, or budget'],
    });
    expect(await bad({ safety: { cascadeErrors: 11 } })).toMatchObject({
      status: 400,
      errors: ['safety.cascadeErrors: cascadeErrors must be <= cascadeWindow'],
    });
    const missing = await call('PATCH', `/v1/agents/${uniqueId('none')}/limits`, {
      token: admin,
      body: { safety: { maxTicks: 5 } },
    });
    expect(missing.status).toBe(404);
    expect((await h.agents.status(agentId)).limitChanges).toEqual([]);
  });
});

describe('who may do what', () => {
  let agentId: string;
  beforeAll(async () => {
    agentId = uniqueId('api-roles');
    await h.agents.waitForTask(agentId, (await h.agents.submit(agentId, { goal: 'exists', config: config() })).taskId);
  });

  const expired = () =>
    new SignJWT({ roles: ['admin'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('old')
      .setIssuedAt(0)
      .setExpirationTime(60)
      .sign(new TextEncoder().encode(SECRET));
  const wrongSignature = () =>
    devToken({ secret: 'another-secret-that-is-also-32-characters', sub: 'mallory', roles: ['admin'] });
  const algNone = () =>
    `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'x', roles: ['admin'], exp: 4e9 })).toString('base64url')}.`;
  const noExp = () =>
    new SignJWT({ roles: ['admin'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('forever')
      .sign(new TextEncoder().encode(SECRET));

  // Routes that change nothing an assertion depends on (unlock of an unlocked agent is a 409, not a change).
  const routes = (id: string): [string, string, string, unknown?][] => [
    ['submit', 'POST', `/v1/agents/${id}/tasks`, { goal: 'role check', config: config() }],
    ['status', 'GET', `/v1/agents/${id}`],
    ['list', 'GET', '/v1/agents'],
    ['task', 'GET', `/v1/tasks/agent-${id}-task-1`],
    ['message', 'POST', `/v1/agents/${id}/messages`, { text: 'hello' }],
    ['unlock', 'POST', `/v1/agents/${id}/unlock`, {}],
    ['approvals', 'GET', `/v1/approvals?agentId=${id}`],
    // No call waits: an allowed caller gets 404 for it.
    ['decide', 'POST', `/v1/agents/${id}/approvals/t1.0`, { decision: 'approve' }],
    ['limits', 'PATCH', `/v1/agents/${id}/limits`, { safety: { maxTicks: 50 } }],
    // A finished task's stream (from now) is its end: the answer ends.
    ['taskEvents', 'GET', `/v1/tasks/agent-${id}-task-1/events`],
  ];
  // The status each caller gets: 2xx/409 means allowed through auth.
  const allowed: Record<string, string[]> = {
    viewer: ['status', 'list', 'task', 'approvals', 'taskEvents'],
    operator: ['submit', 'status', 'list', 'task', 'message', 'approvals', 'taskEvents'],
    approver: ['status', 'list', 'task', 'approvals', 'decide', 'taskEvents'],
    admin: ['submit', 'status', 'list', 'task', 'message', 'unlock', 'approvals', 'decide', 'limits', 'taskEvents'],
  };

  it.each(['viewer', 'operator', 'approver', 'admin'] as Role[])(
    'gives a %s exactly its routes, and 403 for the others',
    async (role) => {
      const t = await token(role);
      for (const [name, method, path, body] of routes(agentId)) {
        const r = await call(method, path, { token: t, ...(body !== undefined ? { body } : {}) });
        if (allowed[role]!.includes(name))
          expect([name, r.status < 300 || r.status === 409 || (name === 'decide' && r.status === 404)]).toEqual([
            name,
            true,
          ]);
        else
          expect([name, r.status, r.json.detail]).toEqual([
            name,
            403,
            expect.stringMatching(`needs the \\w+ role; this token has ${role}`),
          ]);
      }
    },
  );

  it('lets every operator halt (the kill switch), and no viewer', async () => {
    const id = uniqueId('api-halt-roles');
    await h.agents.waitForTask(id, (await h.agents.submit(id, { goal: 'exists', config: config() })).taskId);
    expect((await call('POST', `/v1/agents/${id}/halt`, { token: await token('viewer') })).status).toBe(403);
    expect((await call('POST', `/v1/agents/${id}/halt`, { token: await token('operator') })).status).toBe(202);
  });

  it.each([
    ['no token', async () => undefined, /a bearer token is required/],
    ['an expired token', expired, /has expired/],
    ['a wrong signature', wrongSignature, /signature does not verify/],
    ['alg none', async () => algNone(), /refused/],
    ['no exp claim', noExp, /no exp/],
  ])('refuses %s with 401 on every route, with WWW-Authenticate', async (_what, make, message) => {
    const t = await make();
    for (const [name, method, path, body] of [
      ...routes(agentId),
      ['halt', 'POST', `/v1/agents/${agentId}/halt`, {}] as [string, string, string, unknown],
      ['agentEvents', 'GET', `/v1/agents/${agentId}/events`] as [string, string, string],
    ]) {
      const r = await call(method, path, { ...(t ? { token: t } : {}), ...(body !== undefined ? { body } : {}) });
      expect([name, r.status]).toEqual([name, 401]);
      expect(r.json.detail).toMatch(message);
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
    }
  });
});

describe('tenants (a tenant claim configured)', () => {
  const CLAIM = 'custom:tenant';
  let tenantServer: ServerType;
  let tenantBase: string;
  beforeAll(async () => {
    ({ server: tenantServer, base: tenantBase } = await listen(
      createApp({ agents: async () => h.agents, auth: authenticator({ secret: SECRET, tenantClaim: CLAIM }) }),
    ));
  });
  afterAll(async () => {
    await new Promise((r) => tenantServer?.close(r));
  });

  // Tenants of this run only: nobody else's agents are in their lists.
  const acme = uniqueId('acme');
  const globex = uniqueId('globex');
  const tokenOf = (tenant: string, role: Role, sub = `${role}-of-${tenant}`) =>
    devToken({ secret: SECRET, sub, roles: [role], claims: { [CLAIM]: tenant } });
  // A tenant's tasks have their workspace and script in its part of the roots (<root>/<tenant>).
  const configOf = (tenant: string, turns: unknown[] = [DONE]) =>
    scriptedConfig(writeScript(turns, tenantDir(tenant)), makeWorkspace({ 'notes.md': 'hi\n' }, tenantDir(tenant)));
  const as = (t: string) => (method: string, path: string, body?: unknown) =>
    call(method, path, { token: t, base: tenantBase, ...(body !== undefined ? { body } : {}) });
  const listOf = async (t: string) => {
    const page = await call('GET', '/v1/agents?pageSize=200', { token: t, base: tenantBase });
    expect(page.status).toBe(200);
    return page.json.agents as { agentId: string; workflowId: string }[];
  };

  it('gives another tenant 404 for an agent, its task and every route on them, as for a missing agent, and lists none of it', async () => {
    const x = 'their-agent';
    const acmeOp = as(await tokenOf(acme, 'operator'));
    const done = await acmeOp('POST', `/v1/agents/${x}/tasks?wait=60`, { goal: 'say done', config: configOf(acme) });
    expect(done).toMatchObject({
      status: 200,
      json: { agentId: x, taskId: 'task-1', workflowId: `agent-${acme}:${x}-task-1`, outcome: 'COMPLETED' },
    });
    const workflowId = done.json.workflowId as string;
    // Once acme's list shows it, the visibility store has it: globex's list is then truly without it.
    await eventually(
      'listed for acme',
      async () => ((await listOf(await tokenOf(acme, 'viewer'))).some((a) => a.agentId === x) ? true : undefined),
      30_000,
      100,
    );
    expect(await listOf(await tokenOf(acme, 'viewer'))).toEqual([
      expect.objectContaining({ agentId: x, workflowId: `agent-${acme}:${x}` }),
    ]);
    expect(await listOf(await tokenOf(globex, 'viewer'))).toEqual([]);

    // Every route, as globex's viewer (reads) and admin (changes), on acme's agent and on one nobody has.
    const viewer = as(await tokenOf(globex, 'viewer'));
    const admin = as(await tokenOf(globex, 'admin'));
    const routes = (
      id: string,
      task: string,
    ): [string, (m: string, p: string, b?: unknown) => ReturnType<typeof call>, string, string, unknown?][] => [
      ['status', viewer, 'GET', `/v1/agents/${id}`],
      ['task', viewer, 'GET', `/v1/tasks/${task}`],
      ['submit', admin, 'POST', `/v1/agents/${id}/tasks`, { goal: 'to an agent that exists' }],
      ['message', admin, 'POST', `/v1/agents/${id}/messages`, { text: 'hello' }],
      ['halt', admin, 'POST', `/v1/agents/${id}/halt`, { reason: 'mine now' }],
      ['unlock', admin, 'POST', `/v1/agents/${id}/unlock`, {}],
      ['limits', admin, 'PATCH', `/v1/agents/${id}/limits`, { safety: { maxTicks: 1 } }],
      ['taskEvents', viewer, 'GET', `/v1/tasks/${task}/events`],
      ['agentEvents', viewer, 'GET', `/v1/agents/${id}/events`],
    ];
    const missing = routes('no-agent', `agent-${globex}:no-agent-task-1`);
    for (const [i, [name, caller, method, path, body]] of routes(x, workflowId).entries()) {
      const r = await caller(method, path, body);
      const [, otherCaller, otherMethod, otherPath, otherBody] = missing[i]!;
      const none = await otherCaller(otherMethod, otherPath, otherBody);
      expect([name, r.status]).toEqual([name, 404]);
      // The same words, but for the id: nothing tells another tenant's agent from no agent.
      expect([name, String(r.json.detail).replaceAll(workflowId, '<task>').replaceAll(x, '<id>')]).toEqual([
        name,
        String(none.json.detail).replaceAll(`agent-${globex}:no-agent-task-1`, '<task>').replaceAll('no-agent', '<id>'),
      ]);
    }

    // Nothing reached acme's agent: no message, no halt.
    const acmeViewer = as(await tokenOf(acme, 'viewer'));
    // Acme's own stream names its agent by acme's id, as its other answers do.
    const stream = await acmeViewer('GET', `/v1/tasks/${workflowId}/events?from=0`);
    const end = /^event: end\nid: .*\ndata: (.*)$/m.exec(String(stream.json))?.[1];
    expect(JSON.parse(end ?? '{}')).toMatchObject({ status: 'completed', result: { agentId: x } });
    expect((await acmeViewer('GET', `/v1/agents/${x}`)).json).toMatchObject({
      agentId: x,
      agentState: 'WAITING_FOR_EVENT',
      tasks: [expect.objectContaining({ agentId: x })],
    });
    expect((await acmeViewer('GET', `/v1/tasks/${workflowId}`)).json).toMatchObject({
      agentId: x,
      outcome: 'COMPLETED',
    });
    expect((await h.agents.status(`${acme}:${x}`)).unlocks).toEqual([]);
    // The Web UI's filter: the agent carries its tenant.
    const tagged: string[] = [];
    for await (const w of h.agents.client.workflow.list({ query: `Tenant = '${acme}'` })) tagged.push(w.workflowId);
    expect(tagged).toEqual([`agent-${acme}:${x}`]);
  });

  it('lets two tenants use the same agent name, each its own agent', async () => {
    const name = uniqueId('same');
    const [a, g] = [as(await tokenOf(acme, 'operator')), as(await tokenOf(globex, 'operator'))];
    const [ra, rg] = await Promise.all([
      a('POST', `/v1/agents/${name}/tasks?wait=60`, {
        goal: 'for acme',
        config: configOf(acme, [{ text: 'acme here' }]),
      }),
      g('POST', `/v1/agents/${name}/tasks?wait=60`, {
        goal: 'for globex',
        config: configOf(globex, [{ text: 'globex here' }]),
      }),
    ]);
    expect(ra).toMatchObject({
      status: 200,
      json: { agentId: name, taskId: 'task-1', workflowId: `agent-${acme}:${name}-task-1`, finalText: 'acme here' },
    });
    expect(rg).toMatchObject({
      status: 200,
      json: { agentId: name, taskId: 'task-1', workflowId: `agent-${globex}:${name}-task-1`, finalText: 'globex here' },
    });
    const [sa, sg] = [await a('GET', `/v1/agents/${name}`), await g('GET', `/v1/agents/${name}`)];
    expect((sa.json.tasks as { finalText?: string }[]).map((t) => t.finalText)).toEqual(['acme here']);
    expect((sg.json.tasks as { finalText?: string }[]).map((t) => t.finalText)).toEqual(['globex here']);
  });

  it.each([
    ['no tenant claim', {}, /the token has no custom:tenant claim naming its tenant: ask for a token with one/],
    ['an empty one', { [CLAIM]: '' }, /no custom:tenant claim/],
    [
      'one with the separator',
      { [CLAIM]: 'acme:x' },
      /the token's custom:tenant claim is not a tenant id: tenant may hold only letters/,
    ],
    ['a number', { [CLAIM]: 7 }, /the token's custom:tenant claim is not a tenant id: tenant must be a string/],
  ])('refuses a token with %s with 403 on every route, never as all tenants', async (_what, claims, detail) => {
    const t = await devToken({ secret: SECRET, sub: 'nobody-knows', roles: ['admin'], claims });
    for (const [method, path] of [
      ['GET', '/v1/agents'],
      ['GET', '/v1/agents/x'],
      ['GET', `/v1/tasks/agent-${acme}:x-task-1`],
      ['POST', '/v1/agents/x/halt'],
    ]) {
      const r = await call(method!, path!, { token: t, base: tenantBase });
      expect([path, r.status, r.headers.get('content-type')]).toEqual([path, 403, 'application/problem+json']);
      expect(r.json.detail).toMatch(detail);
    }
  });

  it("keeps a tenant's agent in its tenant's list after it continues as new", async () => {
    const agents = new AgentClient({
      connection: h.connection,
      taskQueue: h.taskQueue,
      continueAsNewAfterEvents: 10,
      tenant: acme,
    });
    const name = uniqueId('can');
    for (const goal of ['one', 'two'])
      await agents.waitForTask(name, (await agents.submit(name, { goal, config: configOf(acme) })).taskId);
    const handle = agents.client.workflow.getHandle(`agent-${acme}:${name}`);
    await eventually('a new run', async () => {
      const d = await handle.describe();
      return d.runId !== d.raw.workflowExecutionInfo?.firstRunId ? d : undefined;
    });
    expect((await handle.describe()).typedSearchAttributes.get(TenantKey)).toBe(acme);
    await eventually(
      'listed after continue-as-new',
      async () =>
        (await agents.listAgents({ pageSize: 200 })).agents.some((a) => a.agentId === name) ? true : undefined,
      30_000,
      100,
    );
  });
});

describe('bad input', () => {
  let op: string;
  beforeAll(async () => {
    op = await token('operator');
  });

  it.each([
    ['malformed JSON', { raw: '{"goal": ' }, 400, /JSON/],
    ['a goal of the wrong type', { body: { goal: 7 } }, 400, /goal/],
    ['an unknown field', { body: { goal: 'g', shell: 'sh' } }, 400, /shell/],
    ['a priority of 0', { body: { goal: 'g', priority: 0 } }, 400, /priority/],
    [
      'a bad config number',
      { body: { goal: 'g', config: { safety: { maxTicks: -1 } }, llm: 'scripted:/x.json' } },
      400,
      /safety\.maxTicks: must be > 0/,
    ],
    [
      'a malformed guide id',
      { body: { goal: 'g', config: { guide: 'Zen Master' }, llm: 'scripted:/x.json' } },
      400,
      /guide: must be a guide id/,
    ],
    ['a 2 MiB body', { body: { goal: 'x'.repeat(2 * 1024 * 1024) } }, 413, /over 1048576 bytes/],
  ])('answers %s with a 4xx problem+json that says what is wrong', async (_what, req, status, detail) => {
    const r = await call('POST', `/v1/agents/${uniqueId('api-bad')}/tasks`, { token: op, ...(req as object) });
    expect(r.status).toBe(status);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(JSON.stringify(r.json)).toMatch(detail);
    expect(JSON.stringify(r.json)).not.toMatch(/\n\s+at |\.ts:\d+/);
  });

  it('lists every invalid field, not only the first', async () => {
    const r = await call('POST', `/v1/agents/${uniqueId('api-bad')}/tasks`, {
      token: op,
      body: { goal: 7, priority: 'high' },
    });
    expect(r.status).toBe(400);
    expect(r.json.errors).toEqual(
      expect.arrayContaining([expect.stringMatching(/^goal:/), expect.stringMatching(/^priority:/)]),
    );
  });

  it.each(['..%2F..%2Fetc%2Fpasswd', '%C3%A9t%C3%A9', 'a%20b', 'x-task-1', '-leading', 'a'.repeat(65)])(
    'refuses the agent id %s with 400 and creates nothing',
    async (id) => {
      const r = await call('POST', `/v1/agents/${id}/tasks`, { token: op, body: { goal: 'g', config: config() } });
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.json.errors)).toMatch(/agentId/);
    },
  );

  it('answers an unknown agent with 404 and an unknown route with 404, never a 500', async () => {
    const viewer = await token('viewer');
    expect((await call('GET', `/v1/agents/${uniqueId('nobody')}`, { token: viewer })).status).toBe(404);
    expect(
      (
        await call('POST', `/v1/agents/${uniqueId('nobody')}/tasks`, {
          token: op,
          body: { goal: 'no config, no agent' },
        })
      ).status,
    ).toBe(404);
    expect((await call('GET', `/v1/tasks/agent-${uniqueId('nobody')}-task-1`, { token: viewer })).status).toBe(404);
    expect((await call('GET', '/v1/nothing', { token: viewer })).status).toBe(404);
  });
});

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 and a typed client built from it drives the API', async () => {
    const doc = (await call('GET', '/openapi.json')).json;
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(result.specification).toBe('OpenAPI');

    const api = createClient<paths>({ baseUrl: base, headers: { authorization: `Bearer ${await token('operator')}` } });
    const agentId = uniqueId('api-typed');
    const { data, response } = await api.POST('/v1/agents/{agentId}/tasks', {
      params: { path: { agentId }, query: { wait: 60 } },
      body: { goal: 'typed', config: config() as unknown as Record<string, unknown> },
    });
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ outcome: 'COMPLETED' });
  });
});

describe('the Lambda handler', () => {
  it('never loads the native worker: its module graph has @temporalio/client and no @temporalio/worker', () => {
    const script = `require(${JSON.stringify(path.join(projectRoot(), 'lib/api/lambda.js'))}); process.stdout.write(JSON.stringify(Object.keys(require.cache)))`;
    const loaded = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as string[];
    expect(loaded.some((f) => f.includes('/@temporalio/client/'))).toBe(true);
    expect(loaded.filter((f) => f.includes('/@temporalio/worker/') || f.includes('/@temporalio/core-bridge/'))).toEqual(
      [],
    );
  });

  /** An API Gateway HTTP API (payload 2.0) event, as AWS sends it. */
  function event(method: string, rawPath: string, opts: { token?: string; body?: unknown; query?: string } = {}) {
    return {
      version: '2.0',
      routeKey: '$default',
      rawPath,
      rawQueryString: opts.query ?? '',
      headers: {
        host: 'abc123.execute-api.eu-west-1.amazonaws.com',
        'content-type': 'application/json',
        ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      },
      requestContext: {
        accountId: '123456789012',
        apiId: 'abc123',
        domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
        domainPrefix: 'abc123',
        http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'jest' },
        requestId: `req-${Math.random().toString(36).slice(2)}`,
        routeKey: '$default',
        stage: '$default',
        time: new Date().toUTCString(),
        timeEpoch: Date.now(),
      },
      isBase64Encoded: false,
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    };
  }
  const context = { functionName: 'starry-api', awsRequestId: 'r1', getRemainingTimeInMillis: () => 30_000 };

  it('serves the same app from API Gateway v2 events, with its JWT secret read from Secrets Manager once, reusing one Temporal connection', async () => {
    const moto = await startMoto();
    const saved = { ...process.env };
    try {
      Object.assign(process.env, moto.env);
      const sm = new SecretsManagerClient({});
      const { ARN } = await sm.send(
        new CreateSecretCommand({ Name: uniqueId('starry-api-jwt'), SecretString: SECRET }),
      );
      Object.assign(process.env, {
        TEMPORAL_ADDRESS: address(),
        STARRY_TASK_QUEUE: h.taskQueue,
        STARRY_API_JWT_SECRET_ARN: ARN,
      });
      const lambda = await import('../../api/lambda');
      const agentId = uniqueId('api-lambda');
      const op = await token('operator');
      const first = await lambda.handler(
        event('POST', `/v1/agents/${agentId}/tasks`, {
          token: op,
          query: 'wait=60',
          body: { goal: 'via lambda', config: config() },
        }) as never,
        context as never,
      );
      expect(first.statusCode).toBe(200);
      expect(JSON.parse(first.body)).toMatchObject({ agentId, outcome: 'COMPLETED' });
      const second = await lambda.handler(
        event('GET', `/v1/agents/${agentId}`, { token: await token('viewer') }) as never,
        context as never,
      );
      expect(second.statusCode).toBe(200);
      expect(JSON.parse(second.body)).toMatchObject({ agentId, agentState: 'WAITING_FOR_EVENT' });
      const unauthorized = await lambda.handler(event('GET', `/v1/agents/${agentId}`) as never, context as never);
      expect(unauthorized.statusCode).toBe(401);
      expect(lambda.connectionsOpened()).toBe(1);
      expect(lambda.secretsReadCount()).toBe(1);
    } finally {
      process.env = saved;
      await moto.stop();
    }
  });
});

describe('when no worker polls the task queue', () => {
  it('answers a submit 503 with Retry-After within seconds, naming the queue, starts no agent, and takes the same submit once a worker runs', async () => {
    const taskQueue = uniqueId('tq-api-nobody');
    const { server: lone, base: loneBase } = await listen(
      createApp({
        agents: async () => new AgentClient({ connection: h.connection, taskQueue }),
        auth: authenticator({ secret: SECRET }),
      }),
    );
    try {
      const agentId = uniqueId('api-nobody');
      const op = await token('operator');
      const req = {
        token: op,
        base: loneBase,
        body: { goal: 'anyone?', config: config() },
        headers: { 'idempotency-key': uniqueId('key') },
      };
      const started = Date.now();
      const r = await call('POST', `/v1/agents/${agentId}/tasks?wait=60`, req);
      expect(r.status).toBe(503);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(r.headers.get('retry-after')).toBe('5');
      expect(r.json.detail).toMatch(new RegExp(`^no worker polls task queue ${taskQueue} .*: nothing was submitted`));
      expect(
        (await call('GET', `/v1/agents/${agentId}`, { token: await token('viewer'), base: loneBase })).status,
      ).toBe(404);

      const worker = await startHarness({ name: 'api-late', taskQueue });
      try {
        const retried = await call('POST', `/v1/agents/${agentId}/tasks?wait=60`, req);
        expect(retried).toMatchObject({ status: 200, json: { taskId: 'task-1', outcome: 'COMPLETED' } });
        expect((await worker.agents.status(agentId)).tasks.map((t) => t.taskId)).toEqual(['task-1']);
      } finally {
        await worker.stop();
      }
    } finally {
      await new Promise((r) => lone.close(r));
    }
  });
});

describe('when Temporal or the issuer is elsewhere', () => {
  it('answers 503 with Retry-After when Temporal cannot be reached, on /healthz and on a route', async () => {
    const { connectClient } = await import('../../client/connection');
    const { AgentClient } = await import('../../client/agent-client');
    const down = createApp({
      agents: async () =>
        new AgentClient({
          connection: await connectClient({ address: '127.0.0.1:1', namespace: 'default' }),
          taskQueue: 'none',
        }),
      auth: authenticator({ secret: SECRET }),
    });
    const health = await down.request('/healthz');
    expect(health.status).toBe(503);
    expect(health.headers.get('retry-after')).toBe('5');
    const r = await down.request('/v1/agents/a1', { headers: { authorization: `Bearer ${await token('viewer')}` } });
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(await r.json()).toMatchObject({
      status: 503,
      detail: expect.stringMatching(/Temporal cannot be reached: cannot reach Temporal at 127\.0\.0\.1:1/),
    });
  });

  it('verifies tokens against an issuer’s JWKS (RS256), with iss, aud and Cognito groups', async () => {
    const { generateKeyPair, exportJWK } = await import('jose');
    const { createServer } = await import('node:http');
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const jwks = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })),
    );
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const port = (jwks.address() as { port: number }).port;
    try {
      const auth = authenticator({
        jwksUrl: `http://127.0.0.1:${port}/.well-known/jwks.json`,
        issuer: 'https://issuer.example',
        audience: 'starry',
      });
      const sign = (claims: Record<string, unknown>, iss = 'https://issuer.example') =>
        new SignJWT(claims)
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setSubject('carol')
          .setIssuer(iss)
          .setAudience('starry')
          .setExpirationTime('5m')
          .sign(privateKey);
      expect(await auth.verify(`Bearer ${await sign({ 'cognito:groups': ['operator', 'other-group'] })}`)).toEqual({
        sub: 'carol',
        roles: ['operator'],
      });
      await expect(auth.verify(`Bearer ${await sign({ roles: ['admin'] }, 'https://evil.example')}`)).rejects.toThrow(
        /claim iss is not accepted/,
      );
      // An HS256 token made with the public key as a secret (the classic confusion) is refused.
      await expect(
        auth.verify(`Bearer ${await devToken({ secret: JSON.stringify(jwk), sub: 'x', roles: ['admin'] })}`),
      ).rejects.toThrow(/refused/);
    } finally {
      jwks.close();
    }
  });
});
