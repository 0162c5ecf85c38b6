import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { runTool, type ToolRequest } from './index';
import { toolsConfig } from './test-support';

/** Routes that answer a failure status with a body. */
const FAILING: Record<string, [number, string]> = {
  '/down': [503, 'maintenance'],
  '/conflict': [409, 'being edited'],
  '/private': [401, 'sign in first'],
  '/forbidden': [403, 'not for you'],
};

/** A real server on 127.0.0.1 with a few fixed routes. */
function startServer(): Promise<{ base: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const failing = FAILING[req.url ?? ''];
    if (failing) {
      res.writeHead(failing[0]).end(failing[1]);
      return;
    }
    switch (req.url) {
      case '/ok':
        res.writeHead(200, { 'content-type': 'text/plain' }).end('hello from the server');
        return;
      case '/big':
        res.writeHead(200).end('b'.repeat(5000));
        return;
      case '/rate-limited':
        res.writeHead(429, { 'retry-after': '2' }).end('slow down');
        return;
      case '/rate-limited-date':
        res.writeHead(429, { 'retry-after': new Date(Date.now() + 60_000).toUTCString() }).end();
        return;
      case '/redirect-inside':
        res.writeHead(302, { location: '/ok' }).end();
        return;
      case '/redirect-outside':
        res.writeHead(302, { location: 'http://example.com/' }).end();
        return;
      case '/slow':
        setTimeout(() => res.writeHead(200).end('late'), 5000).unref();
        return;
      default:
        res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        base: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

describe('http.get', () => {
  let server: { base: string; close(): Promise<void> };
  const call = (url: string, overrides: Partial<ToolRequest> = {}, signal?: AbortSignal) =>
    runTool(
      {
        name: 'http.get',
        args: { url },
        tick: 1,
        workspace: ['/'],
        tools: toolsConfig({ httpAllow: [new URL(server.base).host] }),
        toolTimeoutMs: 10_000,
        ...overrides,
      },
      signal,
    );

  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it('returns status and body for a 200', async () => {
    expect(await call(`${server.base}/ok`)).toEqual({
      success: true,
      data: {
        url: `${server.base}/ok`,
        status: 200,
        contentType: 'text/plain',
        body: 'hello from the server',
        bytes: 21,
        truncated: false,
      },
    });
  });

  it('refuses a host that is not allowed with EPERM and lists the allowed hosts', async () => {
    const result = await call(`${server.base}/ok`, { tools: toolsConfig({ httpAllow: ['example.com'] }) });
    expect(result.error).toMatchObject({
      code: 'EPERM',
      kind: 'execution',
      source: 'http.get',
      suggestion: 'Allowed hosts: example.com.',
    });
    expect(result.error?.message).toContain("'127.0.0.1'");
  });

  it('says so when no host is allowed at all', async () => {
    const result = await call(`${server.base}/ok`, { tools: toolsConfig() });
    expect(result.error?.suggestion).toContain('httpAllow is empty');
  });

  it('reports 429 as a transient E_RATE_LIMIT with retryAfterMs from Retry-After seconds', async () => {
    const result = await call(`${server.base}/rate-limited`);
    expect(result.success).toBe(false);
    expect(result.error).toMatchObject({ code: 'E_RATE_LIMIT', kind: 'transient', source: 'http.get' });
    expect(result.retryAfterMs).toBe(2000);
  });

  it('reads Retry-After given as an HTTP date', async () => {
    const result = await call(`${server.base}/rate-limited-date`);
    expect(result.retryAfterMs).toBeGreaterThan(50_000);
    expect(result.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('reports 5xx as a transient E_UNAVAILABLE', async () => {
    expect((await call(`${server.base}/down`)).error).toMatchObject({ code: 'E_UNAVAILABLE', kind: 'transient' });
  });

  it('retries a 409 like a 503: a conflict may clear up (the house’s one HTTP-status table)', async () => {
    expect((await call(`${server.base}/conflict`)).error).toMatchObject({
      code: 'E_UNAVAILABLE',
      kind: 'transient',
      source: 'http.get',
    });
  });

  it('reports 401 and 403 as EACCES pain: the model chose the URL and can choose another', async () => {
    for (const page of ['private', 'forbidden']) {
      const result = await call(`${server.base}/${page}`);
      expect(result.error).toMatchObject({ code: 'EACCES', kind: 'execution', source: 'http.get' });
      expect(result.error?.suggestion).toMatch(/^The server answered 40[13]; check the URL\.$/);
    }
  });

  it('reports 404 as an execution error with the status', async () => {
    const result = await call(`${server.base}/missing`);
    expect(result.error).toMatchObject({ code: 'ENOENT', kind: 'execution', source: 'http.get' });
    expect(result.error?.message).toContain('HTTP 404');
    expect(result.error?.message).toContain('no such page');
  });

  it('cuts a body larger than the output cap and says so', async () => {
    const result = await call(`${server.base}/big`, {
      tools: toolsConfig({ httpAllow: [new URL(server.base).host], maxOutputBytes: 1000 }),
    });
    expect(result.data).toMatchObject({ status: 200, bytes: 1000, truncated: true });
    expect((result.data as { body: string }).body).toHaveLength(1000);
  });

  it('follows a redirect on an allowed host and refuses one to a host that is not allowed', async () => {
    expect((await call(`${server.base}/redirect-inside`)).data).toMatchObject({
      url: `${server.base}/ok`,
      body: 'hello from the server',
    });
    expect((await call(`${server.base}/redirect-outside`)).error).toMatchObject({ code: 'EPERM' });
  });

  it('reports a refused connection as a transient ECONNREFUSED', async () => {
    const closed = await startServer();
    await closed.close();
    expect(
      (await call(`${closed.base}/ok`, { tools: toolsConfig({ httpAllow: [new URL(closed.base).host] }) })).error,
    ).toMatchObject({ code: 'ECONNREFUSED', kind: 'transient' });
  });

  it('reports its own timeout as a transient ETIMEDOUT', async () => {
    expect((await call(`${server.base}/slow`, { toolTimeoutMs: 200 })).error).toMatchObject({
      code: 'ETIMEDOUT',
      kind: 'transient',
    });
  });

  it('rethrows the abort reason when cancelled', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('halted by test')), 100);
    await expect(call(`${server.base}/slow`, {}, controller.signal)).rejects.toThrow('halted by test');
  });

  it('refuses malformed and non-http URLs with EINVAL', async () => {
    expect((await call('not a url')).error).toMatchObject({ code: 'EINVAL', kind: 'execution' });
    expect((await call('file:///etc/passwd')).error).toMatchObject({ code: 'EINVAL', kind: 'execution' });
  });
});
