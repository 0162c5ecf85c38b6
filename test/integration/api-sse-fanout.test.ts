/**
 * Issue 53: the SSE clients of one task share one history follower in the API process
 * (client/shared-history.ts). Against the real dev server and a real worker, the history calls the API
 * makes are counted on its own connection: while one client or eight follow a task, the calls do not
 * grow with the clients; a client that comes back with `Last-Event-ID` while others hold the follower
 * gets exactly the events it missed, then the live ones.
 */
import { serve, type ServerType } from '@hono/node-server';
import { Connection } from '@temporalio/client';
import { createApp } from '../../api/app';
import { authenticator, devToken } from '../../api/auth';
import { AgentClient } from '../../client/agent-client';
import { comparePositions, parsePosition } from '../../client/history';
import { eventually } from '../../dev/poll';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { readStream, type SseMessage } from '../helpers/sse';

jest.setTimeout(240_000);

const SECRET = 'test-secret-that-is-at-least-32-characters-long';
const viewer = (i: number) => devToken({ secret: SECRET, sub: `viewer-${i}`, roles: ['viewer'] });
const USAGE = { inputTokens: 10, outputTokens: 5 };
const DONE = { text: 'Done.', usage: USAGE };
/** fs.read waits for a human (the task holds until the test decides); fs.list does not. */
const READ = { toolCalls: [{ name: 'fs.read', args: { path: 'notes.md' } }], usage: USAGE };
const LIST = { toolCalls: [{ name: 'fs.list', args: {} }], usage: USAGE };
const ASK = { tools: { approval: { ask: ['fs.read'] } } };
const HISTORY_CALLS = [
  'getWorkflowExecutionHistory',
  'getWorkflowExecutionHistoryReverse',
  'describeWorkflowExecution',
];

let h: Harness;
let connection: Connection;
let server: ServerType;
let base: string;
/** The history calls the API has made, by method. */
const calls = new Map<string, number>();
const totalCalls = () => [...calls.values()].reduce((a, b) => a + b, 0);

beforeAll(async () => {
  h = await startHarness({ name: 'api-sse-fanout' });
  // The API's own connection, its history calls counted as they go to the server.
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const agents = new AgentClient({ connection, taskQueue: h.taskQueue });
  const service = agents.client.workflowService as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  for (const m of HISTORY_CALLS) {
    const original = service[m]!.bind(service);
    service[m] = (...args: unknown[]) => {
      calls.set(m, (calls.get(m) ?? 0) + 1);
      return original(...args);
    };
  }
  const app = createApp({ agents: async () => agents, auth: authenticator({ secret: SECRET }) });
  server = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const a = server.address();
  base = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
afterAll(async () => {
  (server as { closeAllConnections?: () => void })?.closeAllConnections?.();
  await new Promise((r) => server?.close(r));
  await connection?.close();
  await h?.stop();
});

/** Submit a task that waits for approval at each fs.read of `turns`; resolves with it once it waits. */
async function waitingTask(agentId: string, turns: unknown[]) {
  const config = scriptedConfig(writeScript(turns), makeWorkspace({ 'notes.md': '# Notes\n' }), ASK);
  const { workflowId } = await h.agents.submit(agentId, { goal: 'read the notes', config });
  await eventually('the call waits for approval', async () => (await h.agents.approvals(agentId)).approvals[0]);
  return { workflowId };
}

/** Approve the call the agent's task waits on now. */
async function approve(agentId: string): Promise<void> {
  const call = await eventually('a call waits', async () => (await h.agents.approvals(agentId)).approvals[0]);
  await h.agents.decide(agentId, { callId: call.callId, decision: 'approve', by: 'ana' });
}

const waiting = (e: SseMessage) => e.event === 'approval' && !!e.data.waiting;

/**
 * `clients` streams of one task from its start: once each has seen the task wait, the task is let go
 * through ten ticks to its end. The history calls the API makes from then on, and what each client got.
 */
async function follow(clients: number) {
  const agentId = uniqueId(`fan-${clients}`);
  const { workflowId } = await waitingTask(agentId, [READ, ...Array.from({ length: 10 }, () => LIST), DONE]);
  const ready = new Set<number>();
  const streams = await Promise.all(Array.from({ length: clients }, (_, i) => viewer(i))).then((tokens) =>
    tokens.map((token, i) =>
      readStream(`${base}/v1/tasks/${workflowId}/events?from=0`, {
        token,
        onEvent: (e) => void (waiting(e) && ready.add(i)),
      }),
    ),
  );
  await eventually('every client has caught up', async () => ready.size === clients || undefined);
  calls.clear();
  await approve(agentId);
  const results = await Promise.all(streams);
  return { calls: totalCalls(), events: results.map((r) => r.events) };
}

describe('the SSE clients of one task', () => {
  it('share one history follower: the history calls the API makes do not grow with the clients', async () => {
    const one = await follow(1);
    const eight = await follow(8);
    for (const events of eight.events) {
      expect(events.map((e) => e.event)).toEqual(one.events[0]!.map((e) => e.event));
      expect(events).toEqual(eight.events[0]);
    }
    expect(eight.events[0]!.filter((e) => e.event === 'tick')).toHaveLength(12);
    expect(eight.events[0]!.at(-1)).toMatchObject({ event: 'end', data: { status: 'completed' } });
    // One client makes a few calls per tick; eight clients each reading on its own made eight times as many.
    expect(one.calls).toBeGreaterThan(10);
    expect(eight.calls).toBeLessThan(one.calls * 1.5);
  });

  it('gives a client that comes back with Last-Event-ID, while another holds the follower, no gap and no duplicate', async () => {
    const agentId = uniqueId('fan-late');
    const { workflowId } = await waitingTask(agentId, [READ, LIST, LIST, READ, LIST, DONE]);
    const stays = readStream(`${base}/v1/tasks/${workflowId}/events?from=0`, { token: await viewer(0) });
    // The other client leaves once the task waits the first time.
    const first = await readStream(`${base}/v1/tasks/${workflowId}/events?from=0`, {
      token: await viewer(1),
      until: (got) => got.some(waiting),
    });
    const seenWaits = new Set<string>();
    const watcher = readStream(`${base}/v1/tasks/${workflowId}/events?from=0`, {
      token: await viewer(2),
      onEvent: (e) => void (waiting(e) && seenWaits.add(e.id!)),
    });
    await approve(agentId);
    await eventually('the task waits the second time', async () => seenWaits.size === 2 || undefined);
    // It comes back while the task runs: what it missed from history, then the rest live.
    let back: SseMessage[] = [];
    const rest = readStream(`${base}/v1/tasks/${workflowId}/events`, {
      token: await viewer(1),
      lastEventId: first.events.at(-1)!.id!,
      onEvent: (e, got) => void (back = got),
    });
    await eventually('the returning client has caught up', async () => back.filter(waiting).length === 1 || undefined);
    await approve(agentId);
    const [all, again] = await Promise.all([stays, rest, watcher]);
    const joined = [...first.events, ...again.events];
    expect(joined).toEqual(all.events);
    const ids = joined.map((e) => parsePosition(e.id!)!);
    for (let i = 1; i < ids.length; i++) expect(comparePositions(ids[i]!, ids[i - 1]!)).toBeGreaterThan(0);
    expect(joined.filter(waiting)).toHaveLength(2);
    expect(joined.at(-1)).toMatchObject({ event: 'end', data: { status: 'completed' } });
  });
});
