/**
 * Live event streams that stay bounded, on a real port against the real dev server and worker: one
 * client and one tenant each hold at most their share of a process's streams (429 naming the cap; the
 * process's own cap is a 503), and a client that stops reading is dropped once it has taken nothing
 * for the slow-client time, even while everything written to it still fits in the server's socket
 * buffers (a raw socket that never reads, its receive buffer full).
 */
import net from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { createApp, type ApiOptions } from '../../api/app';
import { authenticator, devToken, type Role } from '../../api/auth';
import type { AgentConfigInput } from '../../core/config';
import { eventually } from '../../dev/poll';
import {
  makeWorkspace,
  scriptedConfig,
  startHarness,
  tenantDir,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { sseEvents, type SseMessage } from '../helpers/sse';

jest.setTimeout(180_000);

const SECRET = 'test-secret-that-is-at-least-32-characters-long';
const USAGE = { inputTokens: 10, outputTokens: 5 };
/** fs.read waits for a human: the task holds, its stream open, until the test decides. */
const ASK = { tools: { approval: { ask: ['fs.read'] } } } satisfies AgentConfigInput;

let h: Harness;
const servers: ServerType[] = [];
const streams: AbortController[] = [];

beforeAll(async () => {
  h = await startHarness({ name: 'api-stream-caps' });
});
afterAll(async () => {
  for (const s of streams) s.abort();
  for (const s of servers) {
    (s as { closeAllConnections?: () => void }).closeAllConnections?.();
    await new Promise((r) => s.close(r));
  }
  await h?.stop();
});

async function listen(opts: Partial<ApiOptions>): Promise<string> {
  const app = createApp({
    agents: async () => h.agents,
    auth: authenticator({ secret: SECRET, tenantClaim: 'tenant' }),
    ...opts,
  });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

const token = (sub: string, tenant: string, role: Role = 'viewer') =>
  devToken({ secret: SECRET, sub, roles: [role], claims: { tenant } });

/** A tenant's task that runs `turns` before its fs.read waits for approval: its stream stays open. */
async function waitingTask(
  tenant: string,
  turns: unknown[] = [],
): Promise<{ agentId: string; workflowId: string; callId: string }> {
  const agentId = uniqueId('caps');
  const agents = h.agents.forTenant(tenant);
  // A tenant's scripts and workspaces lie in its part of the root.
  const own = tenantDir(tenant);
  const script = writeScript(
    [
      ...turns,
      { toolCalls: [{ name: 'fs.read', args: { path: 'notes.md' } }], usage: USAGE },
      { text: 'Done.', usage: USAGE },
    ],
    own,
  );
  const config = scriptedConfig(script, makeWorkspace({ 'notes.md': '# Notes\n' }, own), {
    ...ASK,
    safety: { maxTicks: turns.length + 5 },
  });
  const { workflowId } = await agents.submit(agentId, { goal: 'hold the stream open', config });
  const call = await eventually(
    'the call waits for approval',
    async () => (await agents.approvals(agentId)).approvals[0],
  );
  return { agentId, workflowId, callId: call.callId };
}

/** Open a stream; a 200 is read in the background (a client that keeps up) until the test ends. */
async function open(
  url: string,
  bearer: string,
): Promise<{ status: number; retryAfter: string | null; detail?: string }> {
  const stop = new AbortController();
  streams.push(stop);
  const res = await fetch(url, { headers: { authorization: `Bearer ${bearer}` }, signal: stop.signal });
  if (res.status !== 200) {
    const body = (await res.json()) as { detail?: string };
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      ...(body.detail ? { detail: body.detail } : {}),
    };
  }
  void (async () => {
    for await (const _ of sseEvents(res.body!)) void _;
  })().catch(() => undefined);
  return { status: 200, retryAfter: null };
}

describe('stream caps', () => {
  let acme: string;
  let globex: string;
  beforeAll(async () => {
    acme = (await waitingTask('acme')).workflowId;
    globex = (await waitingTask('globex')).workflowId;
  });
  const events = (base: string, workflowId: string) => `${base}/v1/tasks/${encodeURIComponent(workflowId)}/events`;

  it("refuses a client over its share with 429 and Retry-After, saying which cap; its tenant's other clients still stream", async () => {
    const base = await listen({ maxStreams: 10, maxStreamsPerTenant: 6, maxStreamsPerClient: 2 });
    const alice = await token('alice', 'acme');
    expect((await open(events(base, acme), alice)).status).toBe(200);
    expect((await open(events(base, acme), alice)).status).toBe(200);
    const third = await open(events(base, acme), alice);
    expect(third).toEqual({
      status: 429,
      retryAfter: '5',
      detail: expect.stringMatching(
        /^this client \(sub alice\) holds 2 event streams already.*STARRY_API_MAX_STREAMS_PER_CLIENT.*close one of them/,
      ),
    });
    expect((await open(events(base, acme), await token('bob', 'acme'))).status).toBe(200);
  });

  it("refuses a tenant over its share with 429, whichever of its clients asks; another tenant's clients still stream", async () => {
    const base = await listen({ maxStreams: 10, maxStreamsPerTenant: 3, maxStreamsPerClient: 2 });
    for (const sub of ['alice', 'alice', 'bob'])
      expect((await open(events(base, acme), await token(sub, 'acme'))).status).toBe(200);
    const carol = await open(events(base, acme), await token('carol', 'acme'));
    expect(carol).toMatchObject({
      status: 429,
      retryAfter: '5',
      detail: expect.stringMatching(/^tenant acme holds 3 event streams already.*STARRY_API_MAX_STREAMS_PER_TENANT/),
    });
    expect((await open(events(base, globex), await token('dave', 'globex'))).status).toBe(200);
  });

  it('answers 503 once the process serves its most, whoever asks', async () => {
    const base = await listen({ maxStreams: 2, maxStreamsPerTenant: 2, maxStreamsPerClient: 1 });
    expect((await open(events(base, acme), await token('alice', 'acme'))).status).toBe(200);
    expect((await open(events(base, globex), await token('dave', 'globex'))).status).toBe(200);
    expect(await open(events(base, globex), await token('erin', 'globex'))).toMatchObject({
      status: 503,
      retryAfter: '5',
      detail: expect.stringMatching(/serves 2 event streams already/),
    });
  });

  it('tells clients apart by their address on the unauthenticated dev API', async () => {
    const app = createApp({ agents: async () => h.agents, auth: undefined, maxStreamsPerClient: 1 });
    const server: ServerType = await new Promise((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    servers.push(server);
    const base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    expect((await open(events(base, acme), 'ignored')).status).toBe(200);
    expect(await open(events(base, acme), 'ignored')).toMatchObject({
      status: 429,
      detail: expect.stringMatching(/^this client \(address 127\.0\.0\.1\) holds 1 event streams already/),
    });
  });
});

describe('a client that stops reading', () => {
  it('is dropped once it has taken nothing for the slow-client time, though its writes never blocked; a reader stays', async () => {
    // Forty ticks of 8 KB previews fill a receive buffer that is never read; the task then waits.
    const talk = Array.from({ length: 40 }, (_, i) => ({
      text: `tick ${i} ${'x'.repeat(10_000)}`,
      toolCalls: [{ name: 'fs.list', args: {} }],
      usage: USAGE,
    }));
    const { agentId, workflowId, callId } = await waitingTask('acme', talk);
    const slowClientMs = 1_000;
    const base = await listen({ slowClientMs, keepAliveMs: 100, maxStreamsPerClient: 1 });
    const url = new URL(`${base}/v1/tasks/${encodeURIComponent(workflowId)}/events?from=0`);
    const lurker = await token('lurker', 'acme');

    // A raw socket that sends its request and never reads a byte of the answer.
    const raw = net.connect(Number(url.port), url.hostname);
    raw.pause();
    const closed = new Promise<void>((resolve) => raw.once('close', () => resolve()));
    raw.on('error', () => undefined); // the server resets it: expected
    raw.write(
      `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${lurker}\r\n\r\n`,
    );

    // Meanwhile a client that reads: it keeps its stream for many times the slow-client time.
    const reader: SseMessage[] = [];
    const readerRes = await fetch(url, { headers: { authorization: `Bearer ${await token('reader', 'acme')}` } });
    const reading = (async () => {
      for await (const e of sseEvents(readerRes.body!)) reader.push(e);
    })();

    // The lurker's share is its one stream: a second one is refused until the first is dropped.
    const again = await eventually(
      "the lurker's stream is dropped and its slot freed",
      async () => {
        const r = await fetch(url, { headers: { authorization: `Bearer ${lurker}` } });
        if (r.status === 200) return r;
        expect(r.status).toBe(429);
        await r.body?.cancel();
        return undefined;
      },
      60_000,
      200,
    );
    await again.body?.cancel();
    // The server closed the socket: what sat in its buffers for the lurker is gone with it.
    raw.resume();
    await closed;

    await new Promise((r) => setTimeout(r, 3 * slowClientMs));
    await h.agents.forTenant('acme').decide(agentId, { callId, decision: 'approve', by: 'ana' });
    await reading;
    expect(reader.filter((e) => e.event === 'llm')).toHaveLength(42);
    expect(reader.at(-1)).toMatchObject({ event: 'end', data: { status: 'completed' } });
  });
});
