/**
 * Tools of MCP servers through real workflows (issue 15): a real MCP server (test/fixtures/mcp, written
 * with the SDK's server API) over stdio and over Streamable HTTP, named in the agent config and allowed
 * by the worker's policy. Its tools are offered as `<server>.<tool>` with their JSON Schemas; a call
 * succeeds; an `isError` result is pain; a crashing server is a clear failure after Temporal's retries;
 * a server that does not start fails the task naming it; four identical failing calls lock the agent
 * like any other tool's (REPEATED_FAILURE).
 */
import os from 'node:os';
import path from 'node:path';
import { realpathSync } from 'node:fs';
import { parseWorkerPolicy } from '../../core/worker-policy';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { done, times, turn } from '../helpers/scenarios';
import { llmRequests, settledHistory, toolInputs } from '../helpers/workflow-history';
import { startHttpFixture, type HttpFixture } from '../fixtures/mcp/http';

const SERVER = path.resolve(__dirname, '../fixtures/mcp/server.js');
/** The fixture's sandbox sees its folder and the SDK read-only, and a config may set its failure switch. */
const NODE_SERVERS = {
  command: 'node',
  readOnly: [path.dirname(SERVER), path.resolve(__dirname, '../../node_modules')],
  env: ['MCP_FIXTURE_FAIL_START'],
};
const files = (env?: Record<string, string>) => ({
  files: { command: 'node', args: [SERVER], ...(env ? { env } : {}) },
});

let h: Harness;
let http: HttpFixture;
let workspace: string;
beforeAll(async () => {
  workspace = realpathSync(makeWorkspace({}));
  http = await startHttpFixture({ requireAuthorization: 'Bearer sesame' });
  process.env.MCP_TEST_TOKEN = 'sesame';
  // llmDirs: the scripted model's turns are written beside the workspace (writeScript).
  const policy = parseWorkerPolicy({
    roots: [workspace],
    llmDirs: [os.tmpdir()],
    mcpCommands: [NODE_SERVERS],
    mcpEnv: ['MCP_TEST_TOKEN'],
    httpAllow: [`127.0.0.1:${http.port}`],
    allowRoot: true,
  });
  h = await startHarness({ name: 'mcp-tools', activities: { policy } });
});
afterAll(async () => {
  await h?.stop();
  await http?.close();
  delete process.env.MCP_TEST_TOKEN;
});

it('offers a stdio server’s tools with their schemas, runs a call and feels an isError result as pain', async () => {
  const agentId = uniqueId('mcp');
  const config = scriptedConfig(
    writeScript([
      turn({ name: 'files.echo', args: { text: 'hello from MCP' } }),
      turn({ name: 'files.fail', args: {} }),
      done('Echoed.'),
    ]),
    workspace,
    { tools: { mcp: files(), allow: ['files.*', 'fs.read'] } },
  );
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'Echo.', config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'Echoed.' });
  expect(result.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([
    ['files.echo', 'ok', undefined],
    ['files.fail', 'failed', 'E_TOOL_FAILED'],
  ]);
  expect(result.toolCalls[1]?.error).toMatchObject({ kind: 'execution', source: 'files.fail' });
  expect(result.toolCalls[1]?.error?.message).toContain('the widget is broken');

  const history = await settledHistory(h.agents.client, workflowId);
  const [first, second, third] = await llmRequests(history);
  const names = first?.tools.map((t) => t.name) ?? [];
  expect(names).toEqual(
    expect.arrayContaining(['fs.read', 'files.echo', 'files.add', 'files.fail', 'files.slow', 'files.crash']),
  );
  expect(names).not.toContain('fs.list');
  expect(first?.tools.find((t) => t.name === 'files.echo')).toMatchObject({
    description: 'Echo the text back.',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  });
  const system = first?.messages[0];
  expect(system && 'text' in system ? system.text : '').toContain('files.echo');
  const toolText = (r: typeof second) =>
    r?.messages
      .filter((m) => m.role === 'tool')
      .map((m) => ('text' in m ? m.text : ''))
      .at(-1);
  expect(toolText(second)).toContain('hello from MCP');
  expect(toolText(third)).toMatch(/E_TOOL_FAILED[\s\S]*the widget is broken/);
});

it('reaches a Streamable HTTP server with headers filled from the worker’s environment', async () => {
  const agentId = uniqueId('mcp-http');
  const config = scriptedConfig(
    writeScript([turn({ name: 'remote.add', args: { a: 2, b: 40 } }), done('42.')]),
    workspace,
    {
      tools: { mcp: { remote: { url: http.url, headers: { Authorization: 'Bearer ${env:MCP_TEST_TOKEN}' } } } },
    },
  );
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'Add.', config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED' });
  expect(result.toolCalls.map((c) => [c.name, c.status])).toEqual([['remote.add', 'ok']]);
  expect(http.seen.some((headers) => headers.authorization === 'Bearer sesame')).toBe(true);
  // The secret stays on the worker: the history holds the template only.
  const history = await settledHistory(h.agents.client, workflowId);
  expect(JSON.stringify(toolInputs(history))).not.toContain('sesame');
  expect(JSON.stringify(toolInputs(history))).toContain('${env:MCP_TEST_TOKEN}');
});

it('reports a server that crashes on every call as a clear failure once Temporal’s retries are spent', async () => {
  const agentId = uniqueId('mcp-crash');
  const config = scriptedConfig(writeScript([turn({ name: 'files.crash', args: {} }), done('Gave up.')]), workspace, {
    tools: { mcp: files() },
    retry: { initialIntervalMs: 50, backoffCoefficient: 1, maximumIntervalMs: 50, maximumAttempts: 3 },
  });
  const { taskId } = await h.agents.submit(agentId, { goal: 'Crash it.', config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'Gave up.' });
  const [crash] = result.toolCalls;
  expect(crash).toMatchObject({
    name: 'files.crash',
    status: 'failed',
    error: { code: 'E_UNAVAILABLE', kind: 'execution' },
  });
  expect(crash?.error?.message).toContain("MCP server 'files' closed the connection");
  expect(crash?.error?.message).toContain('exit code 1');
  expect(crash?.error?.suggestion).toMatch(/^Tried 3 times/);
});

it('fails the task naming a server that does not start, with what it said', async () => {
  const agentId = uniqueId('mcp-nostart');
  const config = scriptedConfig(writeScript([done()]), workspace, {
    tools: { mcp: files({ MCP_FIXTURE_FAIL_START: '1' }) },
  });
  const { taskId } = await h.agents.submit(agentId, { goal: 'Start.', config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'FAILED', ticks: 0, error: { code: 'E_UNAVAILABLE' } });
  expect(result.error?.message).toContain("MCP server 'files' failed to start");
  expect(result.error?.message).toContain('cannot open database');
});

it('refuses at submit a config that sets NODE_OPTIONS for a server, naming it; nothing is queued', async () => {
  const agentId = uniqueId('mcp-evil');
  const evil = {
    files: { command: 'node', args: [SERVER], env: { NODE_OPTIONS: `--require ${path.join(workspace, 'evil.js')}` } },
  };
  const config = scriptedConfig(writeScript([done()]), workspace, { tools: { mcp: evil } });
  await expect(h.agents.submit(agentId, { goal: 'Load my code.', config })).rejects.toThrow(
    /tools\.mcp\.files\.env: NODE_OPTIONS changes how the server loads code/,
  );
});

it('locks the agent on the fourth identical failing MCP call (REPEATED_FAILURE), like any other tool', async () => {
  const agentId = uniqueId('mcp-repeat');
  const config = scriptedConfig(writeScript([...times(4, { name: 'files.fail', args: {} }), done()]), workspace, {
    tools: { mcp: files() },
  });
  const { taskId } = await h.agents.submit(agentId, { goal: 'Fail.', config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({
    outcome: 'SUSPENDED',
    agentState: 'SAFETY_LOCKOUT',
    reason: { code: 'REPEATED_FAILURE' },
    ticks: 4,
  });
  expect((await h.agents.status(agentId)).agentState).toBe('SAFETY_LOCKOUT');
});
