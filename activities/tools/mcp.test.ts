/**
 * The MCP client against real MCP servers (test/fixtures/mcp, written with the SDK's server API): over
 * stdio as a child process in its sandbox and over Streamable HTTP in this process. Nothing of ours is
 * mocked. The attacks on a stdio server's sandbox are in mcp-escape.test.ts.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import type { McpServerConfig } from '../../core/config';
import type { NormalizedError } from '../../core/errors';
import { DEFAULT_LIMITS, type SandboxLimits } from '../../core/worker-policy';
import { startHttpFixture, type HttpFixture } from '../../test/fixtures/mcp/http';
import { cgroupHost } from './limits';
import { McpPool, fillTemplate, type McpSandboxOptions } from './mcp';
import { ToolError } from '../../core/errors/activity';

const SERVER_JS = path.resolve(__dirname, '../../test/fixtures/mcp/server.js');
/** What the fixture needs to see in its sandbox: its own folder and the SDK (node_modules, read-only). */
const FIXTURE_READ_ONLY = [path.dirname(SERVER_JS), path.resolve(__dirname, '../../node_modules')];
/** The fixture's `picture` image (test/fixtures/mcp/server.js). */
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const TOKEN = 'fixture-token-1234';

let tmp: string;
const pools: McpPool[] = [];
const fixtures: HttpFixture[] = [];

beforeAll(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-test-')));
  // A worker running as root runs servers as nobody: the fixture writes its marker files here.
  if (process.getuid?.() === 0) fs.chownSync(tmp, 65534, 65534);
});

afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
  await Promise.all(fixtures.map((f) => f.close()));
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A pool closed in afterAll (the env holds the token the HTTP headers' template asks for). */
function newPool(opts: ConstructorParameters<typeof McpPool>[0] = {}): McpPool {
  const pool = new McpPool({ env: { FIXTURE_TOKEN: TOKEN }, ...opts });
  pools.push(pool);
  return pool;
}

async function newFixture(opts: Parameters<typeof startHttpFixture>[0] = {}): Promise<HttpFixture> {
  const fixture = await startHttpFixture(opts);
  fixtures.push(fixture);
  return fixture;
}

/** The fixture over stdio; `tag` goes on its command line, so a test can find its processes on the host. */
function stdioConfig(env: Record<string, string> = {}, tag?: string): McpServerConfig {
  return { command: process.execPath, args: [SERVER_JS, ...(tag ? ['--tag', tag] : [])], env };
}

/** Whether any process of the server tagged `tag` (its sandbox or the server in it) still runs. */
function running(tag: string): boolean {
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`\0--tag\0${tag}\0`)) return true;
    } catch {
      // ended meanwhile
    }
  }
  return false;
}

/** The fixture's sandbox, with `limits` over the defaults. */
function sandbox(limits: Partial<SandboxLimits> = {}): McpSandboxOptions {
  return { roots: [tmp], readOnly: FIXTURE_READ_ONLY, limits: { ...DEFAULT_LIMITS, ...limits } };
}
/** Where a server of these tests runs. */
const at = (limits: Partial<SandboxLimits> = {}) => ({ cwd: tmp, sandbox: sandbox(limits) });

/** The rejection of `p` as the NormalizedError of a ToolError (fails the test if it is anything else). */
async function toolErrorOf(p: Promise<unknown>): Promise<NormalizedError> {
  let thrown: unknown;
  try {
    await p;
  } catch (err) {
    thrown = err;
  }
  if (!ToolError.is(thrown))
    throw new Error(`expected a ToolError, got ${thrown === undefined ? 'success' : String(thrown)}`);
  return thrown.error;
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

interface Stats {
  pid: number;
  instance: string;
  uid: number;
  envNames: string[];
  cwd: string;
  env?: string;
  lists: number;
  calls: number;
  initializes: number;
}

const opts = (signal = new AbortController().signal, timeoutMs = 30_000, limits: Partial<SandboxLimits> = {}) => ({
  ...at(limits),
  signal,
  timeoutMs,
});

describe.each(['stdio', 'http'] as const)('McpPool over %s', (transport) => {
  let marker: string;
  let fixture: HttpFixture | undefined;
  let config: McpServerConfig;
  let pool: McpPool;

  beforeAll(async () => {
    marker = path.join(tmp, `cancelled-${transport}`);
    if (transport === 'stdio') {
      config = stdioConfig({ MCP_FIXTURE_MARKER: marker });
    } else {
      fixture = await newFixture({ marker });
      config = { url: fixture.url, headers: { Authorization: 'Bearer ${env:FIXTURE_TOKEN}' } };
    }
    pool = newPool();
  });

  const stats = async (p = pool): Promise<Stats> =>
    JSON.parse((await p.callTool('files', config, 'stats', {}, opts())) as string) as Stats;

  it('lists the tools as <server>.<tool> with their JSON Schemas, skipping names we cannot offer', async () => {
    const specs = await pool.listTools('files', config, at());
    const names = specs.map((s) => s.name);
    expect(names).toEqual(
      expect.arrayContaining(['files.echo', 'files.add', 'files.fail', 'files.slow', 'files.stats', 'files.rpc_error']),
    );
    expect(names.every((n) => n.startsWith('files.') && n.length <= 64)).toBe(true);
    expect(names).not.toContain('files.odd..name');
    expect(names).not.toContain('files.late'); // disabled until `toggle`
    expect(names.some((n) => n.includes('xxxxxxxx'))).toBe(false);
    expect(specs.find((s) => s.name === 'files.echo')).toEqual({
      name: 'files.echo',
      description: 'Echo the text back.',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    });
    // No description: the title stands in.
    expect(specs.find((s) => s.name === 'files.add')?.description).toBe('Add two numbers');
    expect(specs.find((s) => s.name === 'files.add')?.parameters).toMatchObject({
      properties: { a: { type: 'number', description: 'first addend' } },
    });
  });

  it('calls tools and returns their text', async () => {
    await expect(pool.callTool('files', config, 'echo', { text: 'hello' }, opts())).resolves.toBe('hello');
    await expect(pool.callTool('files', config, 'add', { a: 2, b: 3 }, opts())).resolves.toBe('5');
  });

  it('replaces images with a placeholder and returns structured content that has no text', async () => {
    const picture = await pool.callTool('files', config, 'picture', {}, opts());
    expect(picture).toEqual({
      content: ['a tiny picture', `[image image/png, ${Buffer.from(PNG_BASE64, 'base64').length} bytes]`],
    });
    expect(JSON.stringify(picture)).not.toContain(PNG_BASE64.slice(0, 20));
    await expect(pool.callTool('files', config, 'weather', {}, opts())).resolves.toEqual({
      city: 'Taipei',
      celsius: 31,
    });
  });

  it('turns a result with isError into E_TOOL_FAILED, quoting the server', async () => {
    const error = await toolErrorOf(pool.callTool('files', config, 'fail', {}, opts()));
    expect(error).toMatchObject({ code: 'E_TOOL_FAILED', kind: 'execution', source: 'files.fail' });
    expect(error.message).toBe('files.fail reported an error: the widget is broken');
  });

  it('turns invalid arguments into E_SCHEMA with the expected parameters', async () => {
    await pool.listTools('files', config, at());
    const error = await toolErrorOf(pool.callTool('files', config, 'add', { a: 1, b: 'two' }, opts()));
    expect(error).toMatchObject({ code: 'E_SCHEMA', kind: 'execution', source: 'files.add' });
    expect(error.message).toContain('files.add rejected its arguments');
    expect(error.message).toContain('expected number');
    expect(error.suggestion).toContain('"required":["a","b"]');
  });

  it('maps JSON-RPC errors: invalid params, method not found, unknown tool, internal error', async () => {
    const call = (code: number, message: string) =>
      toolErrorOf(pool.callTool('files', config, 'rpc_error', { code, message }, opts()));
    expect(await call(-32602, 'a must be positive')).toMatchObject({
      code: 'E_SCHEMA',
      kind: 'execution',
      message: 'files.rpc_error rejected its arguments: a must be positive',
    });
    expect(await call(-32601, 'no such method')).toMatchObject({ code: 'E_UNKNOWN_TOOL', kind: 'execution' });
    expect(await call(-32603, 'database is locked')).toMatchObject({
      code: 'E_TOOL_FAILED',
      kind: 'execution',
      source: 'files.rpc_error',
      message: "MCP server 'files' failed in rpc_error: database is locked",
    });
    const unknown = await toolErrorOf(pool.callTool('files', config, 'nope', {}, opts()));
    expect(unknown).toMatchObject({ code: 'E_UNKNOWN_TOOL', kind: 'execution', source: 'files.nope' });
    expect(unknown.message).toContain("MCP server 'files' has no tool 'nope'");
  });

  it('rejects with the abort reason when cancelled, and the server sees the cancellation', async () => {
    fs.rmSync(marker, { force: true });
    const controller = new AbortController();
    const reason = new Error('halted by the test');
    const call = pool.callTool('files', config, 'slow', { ms: 60_000 }, opts(controller.signal));
    setTimeout(() => controller.abort(reason), 100);
    await expect(call).rejects.toBe(reason);
    await waitFor(() => fs.existsSync(marker), 'the server to see notifications/cancelled');
    expect(fs.readFileSync(marker, 'utf8')).toContain('halted by the test');
    // The connection is still good.
    await expect(pool.callTool('files', config, 'echo', { text: 'still here' }, opts())).resolves.toBe('still here');
  });

  it('rejects at once with the reason of an already aborted signal', async () => {
    const reason = new Error('too late');
    await expect(pool.callTool('files', config, 'echo', { text: 'x' }, opts(AbortSignal.abort(reason)))).rejects.toBe(
      reason,
    );
    await expect(pool.listTools('files', config, { ...at(), signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  it('times out a call as ETIMEDOUT (transient) and cancels it on the server', async () => {
    fs.rmSync(marker, { force: true });
    const error = await toolErrorOf(pool.callTool('files', config, 'slow', { ms: 60_000 }, opts(undefined, 200)));
    expect(error).toMatchObject({
      code: 'ETIMEDOUT',
      kind: 'transient',
      source: 'files.slow',
      message: "MCP server 'files' did not answer slow within 200 ms",
    });
    await waitFor(() => fs.existsSync(marker), 'the server to see notifications/cancelled');
  });

  it('caches the tool list (one tools/list for two listings) unless listTtlMs is 0', async () => {
    const cached = newPool();
    const before = (await stats(cached)).lists;
    const first = await cached.listTools('files', config, at());
    const second = await cached.listTools('files', config, at());
    expect(second).toEqual(first);
    expect((await stats(cached)).lists - before).toBe(1);

    const uncached = newPool({ listTtlMs: 0 });
    const start = (await stats(uncached)).lists;
    await uncached.listTools('files', config, at());
    await uncached.listTools('files', config, at());
    expect((await stats(uncached)).lists - start).toBe(2);
  });

  it('shares one connection between concurrent first uses', async () => {
    const fresh = newPool();
    const before = fixture ? fixture.stats.initializes : 0;
    const [a, b] = await Promise.all([stats(fresh), stats(fresh), fresh.listTools('files', config, at())]);
    expect(a.instance).toBe(b.instance);
    expect((await stats(fresh)).initializes - before).toBe(1);
  });
});

describe('McpPool over stdio: the server process', () => {
  it('starts the server in cwd with the filled env', async () => {
    const pool = newPool({ env: { FIXTURE_VALUE: 'filled' } });
    const config = stdioConfig({ FIXTURE_ECHO_ENV: 'x-${env:FIXTURE_VALUE}' });
    const stats = JSON.parse((await pool.callTool('files', config, 'stats', {}, opts())) as string) as Stats;
    expect(stats.cwd).toBe(tmp);
    expect(stats.env).toBe('x-filled');
  });

  it('reports a crash as E_UNAVAILABLE (transient) with the exit code and stderr, and starts a fresh server next', async () => {
    const pool = newPool();
    const config = stdioConfig();
    const first = JSON.parse((await pool.callTool('files', config, 'stats', {}, opts())) as string) as Stats;
    const error = await toolErrorOf(pool.callTool('files', config, 'crash', {}, opts()));
    expect(error).toMatchObject({ code: 'E_UNAVAILABLE', kind: 'transient', source: 'files.crash' });
    expect(error.message).toContain("MCP server 'files' closed the connection during crash (exit code 1; stderr:");
    expect(error.message).toContain('crashing on purpose');
    const second = JSON.parse((await pool.callTool('files', config, 'stats', {}, opts())) as string) as Stats;
    expect(second.instance).not.toBe(first.instance);
    await expect(pool.callTool('files', config, 'echo', { text: 'again' }, opts())).resolves.toBe('again');
  });

  it('reports a server that fails at start as fatal, quoting its stderr', async () => {
    const pool = newPool();
    const error = await toolErrorOf(pool.listTools('files', stdioConfig({ MCP_FIXTURE_FAIL_START: '1' }), at()));
    expect(error).toMatchObject({ code: 'E_UNAVAILABLE', kind: 'fatal', source: 'mcp files' });
    expect(error.message).toMatch(
      /^MCP server 'files' failed to start: it exited with code 2 before the initialize handshake; its stderr: /,
    );
    expect(error.message).toContain('cannot open database');
    expect(error.suggestion).toContain('tools.mcp.files');
    // The same for a call.
    const call = await toolErrorOf(
      pool.callTool('files', stdioConfig({ MCP_FIXTURE_FAIL_START: '1' }), 'echo', { text: 'x' }, opts()),
    );
    expect(call).toMatchObject({ code: 'E_UNAVAILABLE', kind: 'fatal' });
    expect(call.message).toContain('cannot open database');
  });

  it('reports a read-only directory of the policy that does not exist as fatal, naming it', async () => {
    const error = await toolErrorOf(
      newPool().listTools('files', stdioConfig(), {
        cwd: tmp,
        sandbox: { ...sandbox(), readOnly: [...FIXTURE_READ_ONLY, '/nonexistent/mcp'] },
      }),
    );
    expect(error).toMatchObject({ code: 'E_UNAVAILABLE', kind: 'fatal', source: 'mcp files' });
    expect(error.message).toContain(
      "MCP server 'files' failed to start: ENOENT: /nonexistent/mcp, which the worker's policy shows it read-only",
    );
  });

  it('reports a command that does not exist as fatal, naming the server', async () => {
    const pool = newPool();
    const error = await toolErrorOf(
      pool.listTools('files', { command: 'openstarry-no-such-mcp-server', args: [] }, at()),
    );
    expect(error).toMatchObject({ code: 'E_UNAVAILABLE', kind: 'fatal', source: 'mcp files' });
    expect(error.message).toContain("MCP server 'files' failed to start: ");
    expect(error.message).toContain('ENOENT');
  });

  it('refuses a missing ${env:X} in env as E_AUTH (fatal) before starting anything', async () => {
    const pool = newPool({ env: {} });
    const error = await toolErrorOf(
      pool.listTools('files', stdioConfig({ TOKEN: '${env:OPENSTARRY_TEST_MISSING}' }), at()),
    );
    expect(error).toMatchObject({ code: 'E_AUTH', kind: 'fatal', source: 'mcp files' });
    expect(error.message).toContain('OPENSTARRY_TEST_MISSING');
    expect(error.message).toContain("MCP server 'files'");
  });

  it('drops the cached list when the server sends tools/list_changed', async () => {
    const pool = newPool();
    const config = stdioConfig();
    expect((await pool.listTools('files', config, at())).map((s) => s.name)).not.toContain('files.late');
    await expect(pool.callTool('files', config, 'toggle', {}, opts())).resolves.toBe('enabled late');
    expect((await pool.listTools('files', config, at())).map((s) => s.name)).toContain('files.late');
    const stats = JSON.parse((await pool.callTool('files', config, 'stats', {}, opts())) as string) as Stats;
    expect(stats.lists).toBe(2);
  });

  it('closes an idle connection (the process ends) and reopens on the next use', async () => {
    const pool = newPool({ idleMs: 50 });
    const config = stdioConfig({}, 'idle');
    const first = JSON.parse((await pool.callTool('files', config, 'stats', {}, opts())) as string) as Stats;
    await waitFor(() => !running('idle'), 'the idle server to end');
    const second = JSON.parse((await pool.callTool('files', config, 'stats', {}, opts())) as string) as Stats;
    expect(second.instance).not.toBe(first.instance);
  });

  it('close() ends every server process', async () => {
    const pool = new McpPool();
    await pool.callTool('files', stdioConfig({}, 'close'), 'stats', {}, opts());
    expect(running('close')).toBe(true);
    await pool.close();
    await waitFor(() => !running('close'), 'the server to end');
  });
});

describe('McpPool over stdio: the sandbox', () => {
  it('runs the server never as root, with its own environment only: PATH, HOME, LANG, PWD and the config’s env', async () => {
    process.env.STARRY_TEST_WORKER_SECRET = 'do-not-leak';
    try {
      const stats = JSON.parse(
        (await newPool().callTool('files', stdioConfig({ FIXTURE_ECHO_ENV: 'mine' }), 'stats', {}, opts())) as string,
      ) as Stats;
      if (process.getuid?.() === 0) expect(stats.uid).toBe(65534);
      // PWD is bwrap's, for its --chdir.
      expect(stats.envNames).toEqual(['FIXTURE_ECHO_ENV', 'HOME', 'LANG', 'PATH', 'PWD', 'STARRY_SANDBOX_OWNER']);
      expect(stats.env).toBe('mine');
    } finally {
      delete process.env.STARRY_TEST_WORKER_SECRET;
    }
  });

  it('refuses a variable that changes how the server loads code, before starting anything', async () => {
    const marker = path.join(tmp, 'preloaded');
    fs.writeFileSync(path.join(tmp, 'preload.js'), `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`);
    const error = await toolErrorOf(
      newPool().listTools('files', stdioConfig({ NODE_OPTIONS: `--require ${path.join(tmp, 'preload.js')}` }), at()),
    );
    expect(error).toMatchObject({ code: 'E_INTERNAL', kind: 'fatal', source: 'mcp files' });
    expect(error.message).toContain('tools.mcp.files.env sets NODE_OPTIONS, which changes how the server loads code');
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('stops a server at its CPU time limit with E_LIMIT cpu, and starts a fresh one for the next call', async () => {
    const pool = newPool();
    const config = stdioConfig();
    const first = JSON.parse(
      (await pool.callTool('files', config, 'stats', {}, opts(undefined, 30_000, { cpuSeconds: 1 }))) as string,
    ) as Stats;
    const error = await toolErrorOf(
      pool.callTool('files', config, 'spin', { ms: 10_000 }, opts(undefined, 30_000, { cpuSeconds: 1 })),
    );
    expect(error).toMatchObject({ code: 'E_LIMIT', kind: 'execution', source: 'files.spin' });
    expect(error.message).toContain(
      "E_LIMIT: MCP server 'files' was stopped during spin: it hit the CPU time limit (limits.cpuSeconds: 1 s per process)",
    );
    const second = JSON.parse(
      (await pool.callTool('files', config, 'stats', {}, opts(undefined, 30_000, { cpuSeconds: 1 }))) as string,
    ) as Stats;
    expect(second.instance).not.toBe(first.instance);
  });

  it('reports a call that leaves the workspace over its cap as E_LIMIT disk', async () => {
    const error = await toolErrorOf(
      newPool().callTool(
        'files',
        stdioConfig(),
        'fill',
        { file: 'fill.bin', bytes: 300_000 },
        opts(undefined, 30_000, { workspaceBytes: 200_000 }),
      ),
    );
    expect(error).toMatchObject({ code: 'E_LIMIT', kind: 'execution', source: 'files.fill' });
    expect(error.message).toMatch(
      /^E_LIMIT: after files\.fill, the workspace holds \d+ bytes, over the workspace's disk limit \(limits\.workspaceBytes: 200000 bytes/,
    );
    fs.rmSync(path.join(tmp, 'fill.bin'));
  });

  it('fails the task with E_LIMIT memory (fatal) for a server that cannot start within its memory', async () => {
    if (!(await cgroupHost())?.memory) return; // without a memory cgroup the runtime's own failure is what is seen
    const error = await toolErrorOf(newPool().listTools('files', stdioConfig(), at({ memoryBytes: 16 * 1024 * 1024 })));
    expect(error).toMatchObject({ code: 'E_LIMIT', kind: 'fatal', source: 'mcp files' });
    expect(error.message).toContain(
      "E_LIMIT: MCP server 'files' failed to start: it hit the memory limit (limits.memoryBytes: 16 MiB)",
    );
  });
});

describe('McpPool over Streamable HTTP: reaching the server', () => {
  it('sends the headers with their templates filled', async () => {
    const fixture = await newFixture();
    const pool = newPool();
    await pool.listTools('api', { url: fixture.url, headers: { Authorization: 'Bearer ${env:FIXTURE_TOKEN}' } }, at());
    expect(fixture.seen.length).toBeGreaterThan(0);
    expect(fixture.seen.every((h) => h.authorization === `Bearer ${TOKEN}`)).toBe(true);
  });

  it('refuses a missing ${env:X} in headers as E_AUTH (fatal), sending nothing', async () => {
    const fixture = await newFixture();
    const pool = newPool({ env: {} });
    const error = await toolErrorOf(
      pool.listTools(
        'api',
        { url: fixture.url, headers: { Authorization: 'Bearer ${env:OPENSTARRY_TEST_MISSING}' } },
        at(),
      ),
    );
    expect(error).toMatchObject({ code: 'E_AUTH', kind: 'fatal', source: 'mcp api' });
    expect(error.message).toContain('OPENSTARRY_TEST_MISSING');
    expect(error.message).toContain("MCP server 'api'");
    expect(fixture.seen).toHaveLength(0);
  });

  it('reports HTTP 401 as E_AUTH (fatal) without the token', async () => {
    const fixture = await newFixture({ requireAuthorization: 'Bearer the-right-one' });
    const error = await toolErrorOf(
      newPool().listTools('api', { url: fixture.url, headers: { Authorization: 'Bearer ${env:FIXTURE_TOKEN}' } }, at()),
    );
    expect(error).toMatchObject({ code: 'E_AUTH', kind: 'fatal', source: 'mcp api' });
    expect(error.message).toContain(`MCP server 'api' could not be reached at ${fixture.url}: HTTP 401`);
    expect(error.message).not.toContain(TOKEN);
  });

  it('reports a URL that is not an endpoint (404) as fatal', async () => {
    const fixture = await newFixture();
    const error = await toolErrorOf(newPool().listTools('api', { url: fixture.url.replace(/\/mcp$/, '/nope') }, at()));
    expect(error).toMatchObject({ code: 'E_UNAVAILABLE', kind: 'fatal', source: 'mcp api' });
    expect(error.message).toContain('HTTP 404');
  });

  it('classifies a status at connect by the house’s HTTP-status table: 408 ETIMEDOUT and 409, 429, 503 retried; 403 the configuration’s credential', async () => {
    const server = http.createServer((req, res) => res.writeHead(Number(req.url?.split('/')[1])).end('no'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      const classOf = async (status: number) => {
        const error = await toolErrorOf(
          newPool().listTools('api', { url: `http://127.0.0.1:${port}/${status}/mcp` }, at()),
        );
        return [status, error.code, error.kind];
      };
      expect(await Promise.all([408, 409, 429, 503, 403].map(classOf))).toEqual([
        [408, 'ETIMEDOUT', 'transient'],
        [409, 'E_UNAVAILABLE', 'transient'],
        [429, 'E_RATE_LIMIT', 'transient'],
        [503, 'E_UNAVAILABLE', 'transient'],
        [403, 'E_AUTH', 'fatal'],
      ]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reports a refused connection as transient E_UNAVAILABLE', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as { port: number };
    await new Promise((resolve) => closed.close(resolve));
    const error = await toolErrorOf(newPool().listTools('api', { url: `http://127.0.0.1:${port}/mcp` }, at()));
    expect(error).toMatchObject({ code: 'E_UNAVAILABLE', kind: 'transient', source: 'mcp api' });
    expect(error.message).toContain("MCP server 'api' could not be reached");
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('drops a session the server forgot (transient) and opens a new one on the next call', async () => {
    const fixture = await newFixture();
    const pool = newPool();
    const config = { url: fixture.url };
    await expect(pool.callTool('api', config, 'echo', { text: 'one' }, opts())).resolves.toBe('one');
    await fixture.forgetSessions();
    const error = await toolErrorOf(pool.callTool('api', config, 'echo', { text: 'two' }, opts()));
    expect(error).toMatchObject({ code: 'E_UNAVAILABLE', kind: 'transient', source: 'api.echo' });
    expect(error.message).toContain("MCP server 'api' no longer knows our session");
    await expect(pool.callTool('api', config, 'echo', { text: 'three' }, opts())).resolves.toBe('three');
    expect(fixture.stats.initializes).toBe(2);
  });
});

describe('fillTemplate', () => {
  it('fills every ${env:NAME} and leaves other text alone', () => {
    expect(fillTemplate('Bearer ${env:A}-${env:B}', { A: 'x', B: '' }, 'tools.mcp.gh.headers.Authorization')).toBe(
      'Bearer x-',
    );
    expect(fillTemplate('plain ${HOME} $env:A', { A: 'x' }, 'tools.mcp.gh.env.X')).toBe('plain ${HOME} $env:A');
  });

  it('refuses a missing variable as E_AUTH fatal, naming it and the server but no value', () => {
    let thrown: unknown;
    try {
      fillTemplate('${env:SET} ${env:UNSET}', { SET: 'secret-value' }, 'tools.mcp.gh.headers.Authorization');
    } catch (err) {
      thrown = err;
    }
    expect(ToolError.is(thrown)).toBe(true);
    const error = (thrown as ToolError).error;
    expect(error).toMatchObject({ code: 'E_AUTH', kind: 'fatal', source: 'mcp gh' });
    expect(error.message).toContain('UNSET');
    expect(error.message).toContain("MCP server 'gh'");
    expect(error.message).not.toContain('secret-value');
  });
});
