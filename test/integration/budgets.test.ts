/**
 * Shared budgets (the Budget Manager, docs/ARCHITECTURE.md#budget-manager) end to end: real workers, the
 * real budget and agent workflows, the scripted controller. Agents draw from one budget in leases, return
 * what they did not use, stop together when it is spent; a lost worker's lease returns by expiry; the
 * admin surface (client, CLI, HTTP API) creates, raises and shows budgets, recording who did it.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { serve, type ServerType } from '@hono/node-server';
import { createApp } from '../../api/app';
import { authenticator, devToken } from '../../api/auth';
import { AgentClient, RefusedError } from '../../client/agent-client';
import type { BudgetStatus } from '../../client/budget-client';
import type { TaskResult } from '../../core/types';
import { eventually } from '../../dev/poll';
import { projectRoot } from '../../dev/paths';
import {
  address,
  makeWorkspace,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { LIST, done, times, turn, USAGE, WORKSPACE_FILES } from '../helpers/scenarios';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';
import { historyOf } from '../helpers/workflow-history';

jest.setTimeout(180_000);

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'budgets' });
});
afterAll(async () => {
  await h?.stop();
});

const PER_TICK = USAGE.inputTokens + USAGE.outputTokens;
/** The output cap of every call in these tests: the most one call may overshoot a budget by. */
const OUTPUT_CAP = 50;
/** The lease size of the budget the three agents share. */
const LEASE = 1_000;

const budgetConfig = (turns: unknown[], budget: string | undefined, safety: Record<string, number> = {}) =>
  scriptedConfig(writeScript(turns), makeWorkspace(WORKSPACE_FILES), {
    ...(budget !== undefined ? { budget } : {}),
    safety: { maxOutputTokens: OUTPUT_CAP, maxTicks: 200, ...safety },
  });

async function runTask(agentId: string, config: ReturnType<typeof budgetConfig>, agents = h.agents) {
  const { taskId, workflowId } = await agents.submit(agentId, { goal: 'List the workspace, again and again.', config });
  return { workflowId, result: await agents.waitForTask(agentId, taskId) };
}

const show = (name: string): Promise<BudgetStatus> => h.agents.budgets().show(name);

describe('agents drawing from one shared budget', () => {
  it('all stop together (STOPPED, SHARED_BUDGET_EXHAUSTED) when it is spent, never above the limit by more than one call’s output cap', async () => {
    const name = uniqueId('team');
    const limit = 6_000;
    await h.agents.budgets().create({ name, tokens: limit, leaseTokens: LEASE, by: 'alice' });
    const runs = await Promise.all(
      ['a', 'b', 'c'].map((n) => runTask(uniqueId(`shared-${n}`), budgetConfig([...times(80, LIST), done()], name))),
    );
    const results: TaskResult[] = runs.map((r) => r.result);
    for (const r of results) {
      expect(r).toMatchObject({
        outcome: 'SUSPENDED',
        agentState: 'STOPPED',
        reason: { code: 'SHARED_BUDGET_EXHAUSTED', message: expect.stringContaining(`starry budget raise ${name}`) },
      });
      expect(r.ticks).toBeGreaterThan(1);
    }
    for (const r of results)
      expect(await h.agents.status(r.agentId)).toMatchObject({
        agentState: 'STOPPED',
        reason: { code: 'SHARED_BUDGET_EXHAUSTED' },
      });
    const s = await show(name);
    const used = results.reduce((sum, r) => sum + r.tokensUsed, 0);
    // Every lease came back: the budget counts exactly what the agents used, and never much more than its limit.
    expect(s).toMatchObject({ limit, spent: used, leases: [], leased: 0 });
    expect(s.spent).toBeLessThanOrEqual(limit + OUTPUT_CAP);
    expect(s.available).toBe(Math.max(0, limit - used));
    // They stopped because it was spent: most of it is used, and what is left (if anything) cannot cover
    // the next call's worst case (what it may send, estimated from its context, plus the output cap).
    expect(s.spent).toBeGreaterThan(limit / 2);
    const needs = results.map((r) => {
      const estimate = /it may send about (\d+) tokens/.exec(r.reason?.message ?? '');
      if (!estimate) expect(r.reason?.message).toMatch(/is spent \(\d+ of 6000 tokens spent or leased\)/);
      return estimate ? Number(estimate[1]) + OUTPUT_CAP : 0;
    });
    // Racing for the last tokens, an agent counts the others' leases as taken: what is left when they all
    // stopped is at most what each held back (a lease) beside what its next call needed.
    expect(s.available).toBeLessThan(results.length * (LEASE + Math.max(...needs)));
  });

  it('takes back what a task did not use when it ends, and a raise lets a stopped agent resume', async () => {
    const name = uniqueId('ret');
    await h.agents.budgets().create({ name, tokens: 100_000, by: 'alice' });
    const agentId = uniqueId('returns');
    const { result } = await runTask(agentId, budgetConfig([turn(LIST), turn(LIST), done()], name));
    expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: 3, tokensUsed: 3 * PER_TICK });
    const s = await show(name);
    expect(s).toMatchObject({ limit: 100_000, spent: 3 * PER_TICK, leased: 0, available: 100_000 - 3 * PER_TICK });
    expect(s.leases).toEqual([]);
    const [lease, back] = s.audit.filter((e) => e.action === 'lease' || e.action === 'return');
    expect(lease).toMatchObject({ action: 'lease', tokens: 10_000, by: expect.stringContaining(agentId) });
    expect(back).toMatchObject({ action: 'return', tokens: 10_000 - 3 * PER_TICK, leaseId: lease!.leaseId });

    // Spent: the next agent stops at its first call; raised, it resumes and completes.
    const tight = uniqueId('tight');
    await h.agents.budgets().create({ name: tight, tokens: 10, by: 'alice' });
    const stopped = await runTask(uniqueId('stops'), budgetConfig([turn(LIST), done()], tight));
    expect(stopped.result).toMatchObject({
      outcome: 'SUSPENDED',
      ticks: 1,
      reason: { code: 'SHARED_BUDGET_EXHAUSTED' },
    });
    await h.agents.budgets().raise(tight, { tokens: 50_000, by: 'bob', note: 'more' });
    await h.agents.unlock(stopped.result.agentId, { resume: true, by: 'bob' });
    const resumed = await h.agents.waitForTask(stopped.result.agentId, stopped.result.taskId);
    expect(resumed.outcome).toBe('COMPLETED');
    expect((await show(tight)).leases).toEqual([]);
  });

  it('refuses at submit a config whose budget does not exist, leaving no agent behind', async () => {
    const agentId = uniqueId('nobudget');
    await expect(
      h.agents.submit(agentId, { goal: 'x', config: budgetConfig([done()], 'no-such-budget') }),
    ).rejects.toThrow(RefusedError);
    await expect(
      h.agents.submit(agentId, { goal: 'x', config: budgetConfig([done()], 'no-such-budget') }),
    ).rejects.toThrow(/budget "no-such-budget" does not exist .*starry budget create no-such-budget --tokens N/);
    await expect(h.agents.status(agentId)).rejects.toThrow(/unknown agent/);
  });

  it('costs a task two history events (a lease and its return), the same scripted run with and without a budget', async () => {
    const name = uniqueId('cost');
    await h.agents.budgets().create({ name, tokens: 100_000, by: 'alice' });
    const turns = [turn(LIST), turn(LIST), turn(LIST), turn(LIST), done()];
    const without = await runTask(uniqueId('plain'), budgetConfig(turns, undefined));
    const withBudget = await runTask(uniqueId('leased'), budgetConfig(turns, name));
    expect(withBudget.result).toMatchObject({ outcome: 'COMPLETED', ticks: 5 });
    const a = await historyOf(h.agents.client, without.workflowId);
    const b = await historyOf(h.agents.client, withBudget.workflowId);
    const markers =
      b.filter((e) => e.kind === 'markerRecorded').length - a.filter((e) => e.kind === 'markerRecorded').length;
    expect(markers).toBe(2);
    expect(b.length - a.length).toBe(2);
  });
});

describe('a worker lost while its task holds a lease', () => {
  let worker: ChildProcess | undefined;
  afterAll(async () => {
    if (worker) await killWorker(worker);
  });

  it('gets the lease back by its expiry: nothing reported is spent, the rest returns', async () => {
    const name = uniqueId('lost');
    // The budget runs on the harness's worker; the agent on a worker process of its own queue, killed below.
    await h.agents.budgets().create({ name, tokens: 50_000, leaseTtlMs: 2_000, by: 'alice' });
    const queue = uniqueId('tq-lost');
    worker = await startWorkerProcess(queue);
    const agents = new AgentClient({ connection: h.connection, taskQueue: queue });
    const agentId = uniqueId('lost');
    await agents.submit(agentId, {
      goal: 'Wait on the model.',
      config: budgetConfig([{ ...turn(LIST), delayMs: 120_000 }, done()], name),
    });
    const held = await eventually('the task’s lease', async () => {
      const s = await show(name);
      return s.leases.length === 1 ? s : undefined;
    });
    expect(held.leases[0]).toMatchObject({ amount: 10_000, used: 0, holder: expect.stringContaining(agentId) });
    await killWorker(worker);
    worker = undefined;
    const back = await eventually('the lease expired', async () => {
      const s = await show(name);
      return s.leases.length === 0 ? s : undefined;
    });
    expect(back).toMatchObject({ limit: 50_000, spent: 0, leased: 0, available: 50_000 });
    expect(back.audit.at(-1)).toMatchObject({ action: 'expire', tokens: 10_000, leaseId: held.leases[0]!.id });
    await agents.client.workflow.getHandle(agents.agentWorkflowId(agentId)).terminate('test over');
  });
});

describe('the admin surface', () => {
  const SECRET = 'test-secret-that-is-at-least-32-characters-long';
  let server: ServerType;
  let base: string;
  beforeAll(async () => {
    const app = createApp({ agents: async () => h.agents, auth: authenticator({ secret: SECRET }) });
    server = await new Promise((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    const a = server.address();
    base = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });
  const call = async (method: string, route: string, role: 'viewer' | 'admin', sub: string, body?: unknown) => {
    const token = await devToken({ secret: SECRET, sub, roles: [role] });
    const res = await fetch(`${base}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  it('HTTP: an admin creates and raises (recorded as its sub), a viewer reads but cannot change', async () => {
    const name = uniqueId('api');
    expect((await call('POST', '/v1/budgets', 'viewer', 'vera', { name, tokens: 1_000 })).status).toBe(403);
    const created = await call('POST', '/v1/budgets', 'admin', 'ada', { name, tokens: 1_000, note: 'pilot' });
    expect(created).toMatchObject({ status: 201, json: { name, limit: 1_000, createdBy: 'ada' } });
    expect((await call('POST', '/v1/budgets', 'admin', 'ada', { name, tokens: 5 })).status).toBe(409);
    const refused = await call('POST', `/v1/budgets/${name}/raise`, 'viewer', 'vera', { tokens: 500 });
    expect(refused).toMatchObject({ status: 403, json: { detail: expect.stringContaining('admin') } });
    const raised = await call('POST', `/v1/budgets/${name}/raise`, 'admin', 'ada', { tokens: 500, note: 'q4' });
    expect(raised).toMatchObject({ status: 200, json: { limit: 1_500, available: 1_500 } });
    const shown = await call('GET', `/v1/budgets/${name}`, 'viewer', 'vera');
    expect(shown.status).toBe(200);
    expect((shown.json as unknown as BudgetStatus).audit.map((e) => [e.action, e.by, e.tokens, e.note])).toEqual([
      ['create', 'ada', 1_000, 'pilot'],
      ['raise', 'ada', 500, 'q4'],
    ]);
    expect((await call('GET', '/v1/budgets/no-such-budget', 'viewer', 'vera')).status).toBe(404);
    expect((await call('POST', '/v1/budgets', 'admin', 'ada', { name: 'bad name', tokens: 1 })).status).toBe(400);
    const listed = await eventually('the budget listed', async () => {
      const r = await call('GET', '/v1/budgets', 'viewer', 'vera');
      const all = (r.json.budgets ?? []) as BudgetStatus[];
      return all.some((b) => b.name === name) ? all : undefined;
    });
    expect(listed.find((b) => b.name === name)).toMatchObject({ limit: 1_500 });
  });

  it('CLI: budget create, raise and show, each change recorded with --by', async () => {
    const name = uniqueId('cli');
    const create = await starry(['budget', 'create', name, '--tokens', '2000', '--by', 'carol']);
    expect(create).toMatchObject({ code: 0, stdout: `created budget ${name}: 2000 tokens\n` });
    const raise = await starry(['budget', 'raise', name, '--tokens', '300', '--by', 'dan', '--note', 'spike']);
    expect(raise.code).toBe(0);
    expect(raise.stdout).toContain('limit 2300');
    const shown = await starry(['budget', 'show', name]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`budget ${name}: limit 2300 · spent 0`);
    expect(shown.stdout).toMatch(/create 2000 by carol/);
    expect(shown.stdout).toMatch(/raise 300 by dan — spike/);
    const missing = await starry(['budget', 'raise', 'no-such-budget', '--tokens', '1']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no budget "no-such-budget": create it with `starry budget create no-such-budget');
    expect((await starry(['budget', 'create', name, '--tokens', '0'])).code).toBe(64);
  });
});

/** `starry` as a process (not blocking this one, whose worker answers it). */
function starry(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = path.join(projectRoot(), 'bin', 'starry.js');
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, TEMPORAL_ADDRESS: address(), STARRY_TASK_QUEUE: h.taskQueue },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code: code ?? -1, stdout, stderr })));
}
