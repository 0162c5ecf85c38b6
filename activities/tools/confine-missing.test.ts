/**
 * Failing closed: on a host without bubblewrap (Fargate), `shell.run` and stdio MCP servers refuse to
 * run unconfined, with a fatal error that says how to fix it; HTTP MCP servers, which run nowhere on
 * the worker, still work. PATH leaves bwrap out for this file only (its modules, and so the probe done
 * once per process, are this file's own).
 */
import * as path from 'node:path';
import { startHttpFixture, type HttpFixture } from '../../test/fixtures/mcp/http';
import { DEFAULT_LIMITS } from '../../core/worker-policy';
import { sandboxReport } from './confine';
import { runTool } from './index';
import { McpPool } from './mcp';
import { makeWorkspace, testPolicy, toolsConfig, type TempWorkspace } from './test-support';
import { ToolError } from '../../core/errors/activity';

const SERVER_JS = path.resolve(__dirname, '../../test/fixtures/mcp/server.js');

let ws: TempWorkspace;
let http: HttpFixture;
const pool = new McpPool();
const PATH = process.env.PATH;
beforeAll(async () => {
  process.env.PATH = '/nonexistent';
  ws = await makeWorkspace();
  http = await startHttpFixture();
});
afterAll(async () => {
  process.env.PATH = PATH;
  await pool.close();
  await http.close();
  await ws.cleanup();
});

it('shell.run refuses to run a program unconfined, fatally, saying how to fix it', async () => {
  const result = await runTool(
    {
      name: 'shell.run',
      args: { command: 'echo', args: ['x'] },
      tick: 1,
      workspace: [ws.root],
      tools: toolsConfig(),
      toolTimeoutMs: 10_000,
    },
    undefined,
    { policy: testPolicy(ws) },
  );
  expect(result.error).toMatchObject({ code: 'E_INTERNAL', kind: 'fatal', source: 'shell.run' });
  expect(result.error?.message).toMatch(
    /^shell\.run refuses to run unconfined: bwrap is not on the worker's PATH\. Install bubblewrap/,
  );
});

it('a stdio MCP server refuses to start unconfined, fatally, naming the server and saying how to fix it', async () => {
  let thrown: unknown;
  await pool
    .listTools('files', { command: process.execPath, args: [SERVER_JS] }, { cwd: ws.root })
    .catch((err: unknown) => (thrown = err));
  expect(ToolError.is(thrown)).toBe(true);
  const { error } = thrown as ToolError;
  expect(error).toMatchObject({ code: 'E_INTERNAL', kind: 'fatal', source: 'mcp files' });
  expect(error.message).toContain(
    "MCP server 'files' refuses to run unconfined: bwrap is not on the worker's PATH. Install bubblewrap",
  );
  expect(error.message).toContain('serve it over HTTP (tools.mcp.files.url)');
});

it('an HTTP MCP server is reached as before', async () => {
  const specs = await pool.listTools('remote', { url: http.url }, { cwd: ws.root });
  expect(specs.map((s) => s.name)).toContain('remote.echo');
});

it('says so at the worker’s start', async () => {
  expect(await sandboxReport(DEFAULT_LIMITS)).toBe(
    "sandbox: none (bwrap is not on the worker's PATH): shell.run and stdio MCP servers refuse to run",
  );
});
