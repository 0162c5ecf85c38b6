/**
 * Live events over HTTP as an API client meets them: `GET /v1/tasks/{id}/events` and
 * `GET /v1/agents/{id}/events` on a real port, against the real dev server and a real worker, read with
 * `fetch` and parsed as Server-Sent Events. Tasks held by a human approval show that events arrive while
 * the task runs; resuming with `Last-Event-ID` must give exactly the missing events, also after the API
 * restarts and across continue-as-new.
 */
import { spawn } from 'node:child_process';
import type http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { Connection } from '@temporalio/client';
import { createApp, type ApiOptions } from '../../api/app';
import { authenticator, devToken, type Role } from '../../api/auth';
import { AgentClient } from '../../client/agent-client';
import { comparePositions, parsePosition } from '../../client/history';
import type { AgentConfigInput } from '../../core/config';
import { freePort, type DevServer } from '../../dev/dev-server';
import { projectRoot } from '../../dev/paths';
import { eventually } from '../../dev/poll';
import {
  makeWorkspace,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
  startEarlyContinueServer,
} from '../helpers/harness';
import { readStream, sseEvents, type SseMessage } from '../helpers/sse';

jest.setTimeout(240_000);

const SECRET = 'test-secret-that-is-at-least-32-characters-long';
const token = (role: Role, sub = `${role}-user`) => devToken({ secret: SECRET, sub, roles: [role] });
const USAGE = { inputTokens: 10, outputTokens: 5 };
const DONE = { text: 'Done.', usage: USAGE };
const READ = (p = 'notes.md') => ({ toolCalls: [{ name: 'fs.read', args: { path: p } }], usage: USAGE });
/** fs.read waits for a human: the task holds mid-run until the test decides. */
const ASK = { tools: { approval: { ask: ['fs.read'] } } } satisfies AgentConfigInput;
const configFor = (turns: unknown[], overrides: AgentConfigInput = {}) =>
  scriptedConfig(writeScript(turns), makeWorkspace({ 'notes.md': '# Notes\n' }), overrides);

let h: Harness;
const servers: ServerType[] = [];

async function listen(h: Harness, opts: Partial<ApiOptions> = {}): Promise<string> {
  const app = createApp({ agents: async () => h.agents, auth: authenticator({ secret: SECRET }), ...opts });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  servers.push(server);
  const a = server.address();
  return `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
}

let base: string;
beforeAll(async () => {
  h = await startHarness({ name: 'api-events' });
  base = await listen(h);
});
afterAll(async () => {
  for (const s of servers) {
    // A stream a failed test left open would hold `close` forever.
    (s as { closeAllConnections?: () => void }).closeAllConnections?.();
    await new Promise((r) => s.close(r));
  }
  await h?.stop();
});

/** Task stream ids are positions: each one after the last. */
function expectIncreasing(events: SseMessage[]): void {
  const ids = events.map((e) => parsePosition(e.id ?? ''));
  expect(ids.every(Boolean)).toBe(true);
  for (let i = 1; i < ids.length; i++) expect(comparePositions(ids[i]!, ids[i - 1]!)).toBeGreaterThan(0);
}

/** Agent stream ids compare agent part first, then the task part. */
function agentIdKey(id: string): [number, number, number, number, number, number] {
  const [a, t] = id.split('_');
  const pa = parsePosition(a!)!;
  const pt = t ? parsePosition(t)! : { run: -1, event: -1, k: -1 };
  return [pa.run, pa.event, pa.k, pt.run, pt.event, pt.k];
}
function expectAgentIdsIncreasing(events: SseMessage[]): void {
  for (let i = 1; i < events.length; i++) {
    const a = agentIdKey(events[i - 1]!.id!);
    const b = agentIdKey(events[i]!.id!);
    const d = a.map((x, j) => b[j]! - x).find((x) => x !== 0) ?? 0;
    expect(d).toBeGreaterThan(0);
  }
}

/** Submit a task whose first call waits for approval; resolves once it waits. */
async function waitingTask(agentId: string, turns: unknown[] = [READ(), DONE]) {
  const { taskId, workflowId } = await h.agents.submit(agentId, {
    goal: 'read the notes',
    config: configFor(turns, ASK),
  });
  const call = await eventually(
    'the call waits for approval',
    async () => (await h.agents.approvals(agentId)).approvals[0],
  );
  return { taskId, workflowId, callId: call.callId };
}

describe('a task stream', () => {
  it("delivers a task's events while it runs, in order, and ends with its TaskResult", async () => {
    const agentId = uniqueId('sse-live');
    const { workflowId, callId } = await waitingTask(agentId);
    const viewer = await token('viewer');
    let decidedWhileRunning = false;
    const { status, headers, events } = await readStream(`${base}/v1/tasks/${workflowId}/events?from=0`, {
      token: viewer,
      onEvent: async (e) => {
        // The approval arrives while the task waits for it: the stream is live, not a replay at the end.
        if (e.event === 'approval' && e.data.waiting && !decidedWhileRunning) {
          expect(await h.agents.taskResult(workflowId)).toBeUndefined();
          decidedWhileRunning = true;
          await h.agents.decide(agentId, { callId, decision: 'approve', by: 'ana' });
        }
      },
    });
    expect(status).toBe(200);
    expect(headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(decidedWhileRunning).toBe(true);
    expect(events.map((e) => `${e.event}:${String(e.data.status ?? e.data.state ?? '')}`)).toEqual([
      'tick:',
      'llm:',
      'state:WAITING_FOR_APPROVAL',
      'approval:',
      'approval:',
      'state:EXECUTING',
      'tool:started',
      'tool:ok',
      'tick:',
      'llm:',
      'end:completed',
    ]);
    expect(events[0]!.data).toMatchObject({ tick: 1 });
    expect(events[1]!.data).toMatchObject({
      tick: 1,
      toolCalls: [{ name: 'fs.read', args: { path: 'notes.md' } }],
      usage: USAGE,
    });
    expect(events[3]!.data).toMatchObject({ agentId, waiting: [{ callId, tool: 'fs.read' }] });
    expect(events[4]!.data).toMatchObject({ decided: { callId, decision: 'approve', by: 'ana' } });
    expect(events.at(-1)!.data).toMatchObject({
      workflowId,
      status: 'completed',
      result: { outcome: 'COMPLETED', finalText: 'Done.' },
    });
    expectIncreasing(events);
  });

  it('resumes after any Last-Event-ID with exactly the events that follow, also from a restarted API', async () => {
    const agentId = uniqueId('sse-resume');
    const { taskId, workflowId } = await h.agents.submit(agentId, {
      goal: 'read twice and a missing file',
      config: configFor([READ(), READ('missing.md'), READ(), DONE]),
    });
    await h.agents.waitForTask(agentId, taskId);
    const viewer = await token('viewer');
    const all = (await readStream(`${base}/v1/tasks/${workflowId}/events?from=0`, { token: viewer })).events;
    expect(all.filter((e) => e.event === 'tick')).toHaveLength(4);
    // The missing file is pain: the tool's normalized error, then what the guide told the model.
    expect(all.find((e) => e.event === 'tool' && e.data.status === 'error')?.data).toMatchObject({
      error: { code: 'ENOENT' },
    });
    expect(all.find((e) => e.event === 'pain')?.data).toMatchObject({
      tick: 3,
      text: expect.stringContaining('ENOENT'),
    });

    // Another API process (nothing in memory of the first) resumes from every point.
    const restarted = await listen(h);
    for (let i = 0; i < all.length; i++) {
      const rest = await readStream(`${restarted}/v1/tasks/${workflowId}/events`, {
        token: viewer,
        lastEventId: all[i]!.id!,
      });
      expect(rest.events).toEqual(all.slice(i + 1));
    }
    // Without from=0 a finished task's stream is its end.
    const now = await readStream(`${base}/v1/tasks/${workflowId}/events`, { token: viewer });
    expect(now.events).toEqual([all.at(-1)]);
  });

  it('serves 20 concurrent streams of one task the same events', async () => {
    const agentId = uniqueId('sse-many');
    const { workflowId, callId } = await waitingTask(agentId);
    // Twenty clients (one client holds at most 10 streams).
    const viewers = await Promise.all(Array.from({ length: 20 }, (_, i) => token('viewer', `viewer-${i}`)));
    const seenApproval = new Set<number>();
    const streams = viewers.map((viewer, i) =>
      readStream(`${base}/v1/tasks/${workflowId}/events?from=0`, {
        token: viewer,
        onEvent: (e) => {
          if (e.event === 'approval' && e.data.waiting) seenApproval.add(i);
        },
      }),
    );
    await eventually('every stream has seen the waiting call', async () => seenApproval.size === 20 || undefined);
    await h.agents.decide(agentId, { callId, decision: 'deny', by: 'ana', reason: 'not now' });
    const results = await Promise.all(streams);
    for (const r of results) expect(r.events).toEqual(results[0]!.events);
    expect(results[0]!.events.at(-1)).toMatchObject({ event: 'end', data: { status: 'completed' } });
    expect(results[0]!.events.find((e) => e.event === 'approval' && e.data.decided)?.data).toMatchObject({
      decided: { decision: 'deny', reason: 'not now' },
    });
  });

  it('ends a halted task with its CANCELLED result', async () => {
    const agentId = uniqueId('sse-halt');
    const { workflowId } = await waitingTask(agentId);
    const { events } = await readStream(`${base}/v1/tasks/${workflowId}/events`, {
      token: await token('viewer'),
      onOpen: () => h.agents.halt(agentId, { by: 'ops', note: 'stop it' }),
    });
    expect(events.at(-1)).toMatchObject({
      event: 'end',
      data: { status: 'canceled', result: { outcome: 'CANCELLED', agentState: 'STOPPED' } },
    });
  });

  it('keeps an idle stream open with comment lines', async () => {
    const agentId = uniqueId('sse-idle');
    const { workflowId, callId } = await waitingTask(agentId);
    const quick = await listen(h, { keepAliveMs: 50 });
    const comments: string[] = [];
    const done = readStream(`${quick}/v1/tasks/${workflowId}/events`, { token: await token('viewer'), comments });
    await eventually(
      'keep-alive comments arrive while the task waits',
      async () => comments.filter((c) => c === 'keep-alive').length >= 3 || undefined,
    );
    await h.agents.decide(agentId, { callId, decision: 'approve', by: 'ana' });
    expect((await done).events.at(-1)).toMatchObject({ event: 'end' });
  });
});

describe('the example client (examples/events/follow.mjs)', () => {
  it('follows a task to its end through an API restart, each event once', async () => {
    const port = await freePort();
    const app = () => createApp({ agents: async () => h.agents, auth: authenticator({ secret: SECRET }) });
    const start = () =>
      new Promise<ServerType>((resolve) => {
        const s = serve({ fetch: app().fetch, port, hostname: '127.0.0.1' }, () => resolve(s));
      });
    let server = await start();
    const agentId = uniqueId('sse-example');
    const { workflowId, callId } = await waitingTask(agentId);
    const child = spawn(
      process.execPath,
      [path.join(projectRoot(), 'examples/events/follow.mjs'), `http://127.0.0.1:${port}`, workflowId],
      {
        env: { ...process.env, STARRY_TOKEN: await token('viewer') },
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', r));
    await eventually(
      'the example prints the waiting call',
      async () => /^approval .*"waiting"/m.test(out) || undefined,
    );
    // The API goes away mid-stream and comes back: the example resumes where it was.
    (server as http.Server).closeAllConnections();
    await new Promise((r) => server.close(r));
    await h.agents.decide(agentId, { callId, decision: 'approve', by: 'ana' });
    server = await start();
    servers.push(server);
    expect(await exited).toBe(0);
    const printed = out
      .trim()
      .split('\n')
      .map((l) => l.split(' ')[0]);
    expect(printed).toEqual([
      'tick',
      'llm',
      'state',
      'approval',
      'approval',
      'state',
      'tool',
      'tool',
      'tick',
      'llm',
      'end',
    ]);
  });
});

describe('an agent stream', () => {
  it("follows the agent across tasks: its state, each task's events, halt and unlock with who did them", async () => {
    const agentId = uniqueId('sse-agent');
    const first = await waitingTask(agentId);
    const viewer = await token('viewer');
    const admin = await token('admin', 'root-admin');
    const operator = await token('operator', 'ops');
    let ends = 0;
    let unlocked = false;
    const { events } = await readStream(`${base}/v1/agents/${agentId}/events`, {
      token: viewer,
      // Opened mid-task, at the present: then a human decides the waiting call.
      onOpen: () => h.agents.decide(agentId, { callId: first.callId, decision: 'approve', by: 'ana' }),
      onEvent: async (e) => {
        // The agent keeps its first config's approval rules: task 2's read waits too.
        if (e.event === 'approval' && e.data.waiting)
          await h.agents.decide(agentId, { callId: 't1.0', decision: 'approve', by: 'bo' });
        else if (e.event === 'end' && ++ends === 1) await h.agents.submitExisting(agentId, { goal: 'say done' });
        else if (e.event === 'end' && ends === 2)
          await fetch(`${base}/v1/agents/${agentId}/halt`, {
            method: 'POST',
            headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
            body: JSON.stringify({ reason: 'maintenance' }),
          });
        else if (e.event === 'state' && e.data.state === 'STOPPED') {
          unlocked = true;
          await fetch(`${base}/v1/agents/${agentId}/unlock`, {
            method: 'POST',
            headers: { authorization: `Bearer ${admin}` },
          });
        }
      },
      until: (all) => unlocked && all.at(-1)?.event === 'state' && all.at(-1)?.data.state === 'WAITING_FOR_EVENT',
    });
    const names = events.map((e) => e.event);
    expect(names).toContain('task');
    expect(events.find((e) => e.event === 'approval')?.data).toMatchObject({
      decided: { callId: first.callId, by: 'ana' },
    });
    expect(events.filter((e) => e.event === 'end').map((e) => e.data.workflowId)).toEqual([
      first.workflowId,
      `agent-${agentId}-task-2`,
    ]);
    expect(events.find((e) => e.event === 'task')?.data).toMatchObject({ taskId: 'task-2', goal: 'say done' });
    expect(events.find((e) => e.event === 'state' && e.data.state === 'STOPPED')?.data).toMatchObject({
      by: 'ops',
      note: 'maintenance',
    });
    expect(events.at(-1)?.data).toMatchObject({ state: 'WAITING_FOR_EVENT', by: 'root-admin' });
    // No event twice: the agent's history gives approvals, messages and states, each task the rest.
    expect(events.filter((e) => e.event === 'approval').map((e) => (e.data.waiting ? 'waiting' : 'decided'))).toEqual([
      'decided',
      'waiting',
      'decided',
    ]);
    expect(events.filter((e) => e.event === 'alert')).toHaveLength(1);
    expectAgentIdsIncreasing(events);

    // Resuming after any of them gives the events that followed.
    for (const i of [0, Math.floor(events.length / 2), events.length - 2]) {
      const expected = events.slice(i + 1);
      const rest = await readStream(`${base}/v1/agents/${agentId}/events`, {
        token: viewer,
        lastEventId: events[i]!.id!,
        until: (got) => got.length >= expected.length,
      });
      // The two sources may interleave otherwise than live (so ids differ): the same events, each once.
      const bodies = (l: SseMessage[]) => l.map((e) => `${e.event} ${JSON.stringify(e.data)}`).sort();
      expect(bodies(rest.events)).toEqual(bodies(expected));
      expectAgentIdsIncreasing([events[i]!, ...rest.events]);
    }
  });
});

describe('the client library', () => {
  it("cancels an agent stream's polls in flight when its consumer stops reading", async () => {
    const agentId = uniqueId('sse-lib');
    const { callId } = await waitingTask(agentId);
    // A client of its own, its history calls in flight counted.
    const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
    const agents = new AgentClient({ connection, taskQueue: h.taskQueue });
    const service = agents.client.workflowService;
    const original = service.getWorkflowExecutionHistory.bind(service);
    let inFlight = 0;
    service.getWorkflowExecutionHistory = ((...args: Parameters<typeof original>) => {
      inFlight++;
      return original(...args).finally(() => inFlight--);
    }) as typeof original;
    // Opened while the task waits: once read, both sources are in their long polls. A message wakes the agent's.
    const events = await agents.agentEvents(agentId);
    const first = events.next();
    await eventually('both sources polling', async () => (inFlight === 2 ? true : undefined), 5_000);
    await h.agents.message(agentId, 'still there?', 'ana');
    expect((await first).value).toMatchObject({ event: 'message', data: { text: 'still there?', by: 'ana' } });
    // The task's source is (back) in its poll when the consumer leaves.
    await eventually('the task source polling', async () => (inFlight > 0 ? true : undefined), 5_000);
    await events.return(undefined);
    // The agent and its task both wait: a poll left running would stay in flight for its whole long poll.
    await eventually('no history call in flight', async () => inFlight === 0 || undefined, 5_000);
    await h.agents.decide(agentId, { callId, decision: 'approve', by: 'ana' });
    await connection.close();
  });
});

describe('bad input', () => {
  it('refuses unknown tasks and agents (404), bad Last-Event-IDs (400) and bad tokens (401) before streaming', async () => {
    const viewer = await token('viewer');
    const agentId = uniqueId('sse-bad');
    const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'done', config: configFor([DONE]) });
    await h.agents.waitForTask(agentId, taskId);

    const unknownTask = await readStream(`${base}/v1/tasks/agent-${agentId}-task-9/events`, { token: viewer });
    expect(unknownTask).toMatchObject({ status: 404, problem: { detail: expect.stringMatching(/no task workflow/) } });
    const unknownAgent = await readStream(`${base}/v1/agents/nobody-${agentId}/events`, { token: viewer });
    expect(unknownAgent).toMatchObject({ status: 404, problem: { detail: expect.stringMatching(/unknown agent/) } });

    for (const bad of ['garbage', '1.2', '1.2.3_x', '0.5.0']) {
      const r = await readStream(`${base}/v1/tasks/${workflowId}/events`, { token: viewer, lastEventId: bad });
      expect(r).toMatchObject({ status: 400, problem: { detail: expect.stringMatching(/Last-Event-ID/) } });
    }
    const badAgentId = await readStream(`${base}/v1/agents/${agentId}/events`, {
      token: viewer,
      lastEventId: '1.2.3_4',
    });
    expect(badAgentId).toMatchObject({ status: 400, problem: { detail: expect.stringMatching(/Last-Event-ID/) } });

    expect((await readStream(`${base}/v1/tasks/${workflowId}/events`)).status).toBe(401);
    const foreign = await devToken({
      secret: 'another-deployment-secret-of-32-characters',
      sub: 'x',
      roles: ['viewer'],
    });
    expect((await readStream(`${base}/v1/tasks/${workflowId}/events`, { token: foreign })).status).toBe(401);
  });

  it('answers 503 with Retry-After beyond its stream cap, and frees a slot when a client leaves or reads too slowly', async () => {
    const agentId = uniqueId('sse-cap');
    const { workflowId, callId } = await waitingTask(agentId);
    const capped = createApp({
      agents: async () => h.agents,
      auth: authenticator({ secret: SECRET }),
      maxStreams: 1,
      slowClientMs: 200,
    });
    const viewer = await token('viewer');
    const get = (bearer = viewer) =>
      capped.request(`/v1/tasks/${workflowId}/events?from=0`, { headers: { authorization: `Bearer ${bearer}` } });
    // A client that never reads its body: the stream is dropped once a write waits too long.
    const unread = await get();
    expect(unread.status).toBe(200);
    // Another client: the process's cap, not the first client's own share, refuses it.
    const refused = await get(await token('viewer', 'another-viewer'));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.json()).toMatchObject({ detail: expect.stringMatching(/serves 1 event streams already/) });
    const again = await eventually('the slow client is dropped and its slot freed', async () => {
      const r = await get();
      if (r.status === 200) return r;
      await r.body?.cancel();
      return undefined;
    });
    // This one reads: it gets the task's events to the end.
    const events: SseMessage[] = [];
    const reading = (async () => {
      for await (const e of sseEvents(again.body!)) events.push(e);
    })();
    await eventually(
      'the reader sees the waiting call',
      async () => events.some((e) => e.event === 'approval') || undefined,
    );
    await h.agents.decide(agentId, { callId, decision: 'approve', by: 'ana' });
    await reading;
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { status: 'completed' } });
    void unread.body?.cancel().catch(() => undefined);
  });

  it('frees the slot of a client that disconnects mid-stream', async () => {
    const agentId = uniqueId('sse-leave');
    const { workflowId, callId } = await waitingTask(agentId);
    const one = await listen(h, { maxStreams: 1 });
    const viewer = await token('viewer');
    const url = `${one}/v1/tasks/${workflowId}/events?from=0`;
    // Leaves after the first event, mid-task: the socket closes under the server's long poll.
    const left = await readStream(url, { token: viewer, until: (got) => got.length === 1 });
    expect(left.events).toHaveLength(1);
    const back = await eventually('the slot is free again', async () => {
      const r = await fetch(url, { headers: { authorization: `Bearer ${viewer}` } });
      if (r.status === 200) return r;
      await r.body?.cancel();
      return undefined;
    });
    const events: SseMessage[] = [];
    const reading = (async () => {
      for await (const e of sseEvents(back.body!)) events.push(e);
    })();
    await h.agents.decide(agentId, { callId, decision: 'approve', by: 'ana' });
    await reading;
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { status: 'completed' } });
  });

  it('ends a stream with a retryable error when Temporal goes out of reach, and resumes after it', async () => {
    // The API reaches the server through a TCP proxy this test can cut.
    const target = new URL(`http://${process.env.TEMPORAL_ADDRESS}`);
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port), target.hostname);
      sockets.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as net.AddressInfo).port;
    const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
    const agents = new AgentClient({ connection, taskQueue: h.taskQueue });
    const api = await listen({ ...h, agents });

    const agentId = uniqueId('sse-cut');
    const { workflowId, callId } = await waitingTask(agentId);
    const viewer = await token('viewer');
    let cut = false;
    const first = await readStream(`${api}/v1/tasks/${workflowId}/events?from=0`, {
      token: viewer,
      onEvent: (e) => {
        if (e.event === 'approval' && !cut) {
          cut = true;
          // Temporal goes away: close the proxy and every connection through it.
          proxy.close();
          for (const s of sockets) s.destroy();
        }
      },
    });
    expect(first.events.at(-1)).toMatchObject({
      event: 'error',
      data: { retryable: true, message: expect.stringMatching(/Last-Event-ID/) },
    });
    expect(first.events.at(-1)!.id).toBeUndefined();

    await h.agents.decide(agentId, { callId, decision: 'approve', by: 'ana' });
    const lastId = first.events.at(-2)!.id!;
    const rest = await readStream(`${base}/v1/tasks/${workflowId}/events`, { token: viewer, lastEventId: lastId });
    const all = await readStream(`${base}/v1/tasks/${workflowId}/events?from=0`, { token: viewer });
    expect([...first.events.slice(0, -1), ...rest.events]).toEqual(all.events);
    await connection.close();
  });
});

describe('a 300-tick task across continue-as-new', () => {
  let server: DevServer;
  let long: Harness;
  let longBase: string;

  beforeAll(async () => {
    server = await startEarlyContinueServer('sse-can', 400);
    long = await startHarness({ name: 'sse-long', address: server.address });
    longBase = await listen(long);
  });
  afterAll(async () => {
    await long?.stop();
    await server?.stop();
  });

  it('streams every tick once, without a gap, through a reconnect mid-task', async () => {
    const agentId = uniqueId('sse-300');
    const turns = [...Array.from({ length: 299 }, () => READ()), DONE];
    const config = scriptedConfig(writeScript(turns), makeWorkspace({ 'notes.md': 'n\n' }), {
      safety: { maxTicks: 400, tokenBudget: 1_000_000 },
    });
    const { workflowId } = await long.agents.submit(agentId, { goal: 'read the notes 299 times', config });
    const viewer = await token('viewer');
    // Leave after tick 120, then come back with the last id.
    const part1 = await readStream(`${longBase}/v1/tasks/${workflowId}/events?from=0`, {
      token: viewer,
      until: (got) => got.filter((e) => e.event === 'tick').length === 120,
    });
    const part2 = await readStream(`${longBase}/v1/tasks/${workflowId}/events`, {
      token: viewer,
      lastEventId: part1.events.at(-1)!.id!,
    });
    const events = [...part1.events, ...part2.events];
    expect(events.filter((e) => e.event === 'tick').map((e) => e.data.tick)).toEqual(
      Array.from({ length: 300 }, (_, i) => i + 1),
    );
    expect(events.filter((e) => e.event === 'tool' && e.data.status === 'ok')).toHaveLength(299);
    expect(events.at(-1)).toMatchObject({
      event: 'end',
      data: { status: 'completed', result: { outcome: 'COMPLETED', ticks: 300 } },
    });
    expectIncreasing(events);
    // It did move through several histories.
    expect(new Set(events.map((e) => e.id!.split('.')[0])).size).toBeGreaterThan(2);
  });
});
