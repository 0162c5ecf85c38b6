/**
 * The worker's operator sets the outer limits; a task may only narrow them. A worker with a narrow
 * policy refuses, at submit, every task config wider than it — workspace roots, shell commands, hosts,
 * output cap — with a typed Refused failure naming the field, before anything is queued; a config
 * within the policy runs.
 */
import os from 'node:os';
import path from 'node:path';
import { mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import { RefusedError } from '../../client/agent-client';
import { parseWorkerPolicy } from '../../core/worker-policy';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';

let h: Harness;
const allowed = realpathSync(makeWorkspace());
const DONE = writeScript([{ text: 'Done.' }]);

beforeAll(async () => {
  const policy = parseWorkerPolicy({ roots: [allowed], shellAllow: ['ls', 'cat'], httpAllow: ['127.0.0.1:8080'], maxOutputBytes: 10_000, allowRoot: true });
  h = await startHarness({ name: 'worker-policy', activities: { policy } });
});
afterAll(async () => {
  await h?.stop();
});

const inside = () => {
  const dir = path.join(allowed, uniqueId('ws'));
  mkdirSync(dir);
  return dir;
};
const narrow = { shellAllow: ['ls'], httpAllow: [], maxOutputBytes: 5_000 };

describe('a task config wider than the worker policy', () => {
  const wider: Array<[string, () => ReturnType<typeof scriptedConfig>, RegExp]> = [
    ['a workspace root outside the allowed roots', () => scriptedConfig(DONE, realpathSync(os.tmpdir()), { tools: narrow }), /workspace: '.*' is not inside a root the worker allows/],
    [
      'a workspace root that is a symlink out of the allowed roots',
      () => {
        const link = path.join(allowed, uniqueId('escape'));
        symlinkSync(realpathSync(os.tmpdir()), link);
        return scriptedConfig(DONE, link, { tools: narrow });
      },
      /resolves to .*, outside every root the worker allows/,
    ],
    ['a shell command the worker does not allow', () => scriptedConfig(DONE, inside(), { tools: { ...narrow, shellAllow: ['ls', 'sh'] } }), /tools.shellAllow: 'sh' not allowed by the worker/],
    ['a host the worker does not allow', () => scriptedConfig(DONE, inside(), { tools: { ...narrow, httpAllow: ['127.0.0.1:7233'] } }), /tools.httpAllow: '127.0.0.1:7233' not allowed/],
    ['any port of an allowed host', () => scriptedConfig(DONE, inside(), { tools: { ...narrow, httpAllow: ['127.0.0.1:*'] } }), /tools.httpAllow: '127.0.0.1:\*'/],
    [
      'an MCP server the worker does not start',
      () => scriptedConfig(DONE, inside(), { tools: { ...narrow, mcp: { files: { command: 'node', args: ['server.js'] } } } }),
      /tools.mcp.files: the command 'node' is not one the worker starts as an MCP server \(allowed: none\)/,
    ],
    [
      'an MCP server on a host the worker does not allow',
      () => scriptedConfig(DONE, inside(), { tools: { ...narrow, mcp: { remote: { url: 'https://mcp.example.com/mcp' } } } }),
      /tools.mcp.remote: the host of 'https:\/\/mcp.example.com\/mcp' is not allowed by the worker \(allowed: 127.0.0.1:8080\)/,
    ],
    [
      'a worker secret the policy does not pass to MCP servers',
      () => scriptedConfig(DONE, inside(), { tools: { ...narrow, mcp: { local: { url: 'http://127.0.0.1:8080/mcp', headers: { Authorization: 'Bearer ${env:AWS_SECRET_ACCESS_KEY}' } } } } }),
      /tools.mcp.local: \$\{env:AWS_SECRET_ACCESS_KEY\} is not a variable the worker passes to MCP servers \(allowed: none\)/,
    ],
    ['a larger output cap', () => scriptedConfig(DONE, inside(), { tools: { ...narrow, maxOutputBytes: 20_000 } }), /tools.maxOutputBytes: 20000 is above the worker's cap 10000/],
  ];

  it.each(wider)('is refused at submit: %s', async (_name, config, why) => {
    const agentId = uniqueId('wider');
    const submitted = h.agents.submit(agentId, { goal: 'try to widen the sandbox', config: config() });
    await expect(submitted).rejects.toBeInstanceOf(RefusedError);
    await expect(submitted).rejects.toThrow(why);
    await expect(submitted).rejects.toThrow(/a task may only narrow it/);
    // Nothing was queued or run.
    const status = await h.agents.status(agentId);
    expect(status).toMatchObject({ agentState: 'WAITING_FOR_EVENT', queue: [], tasks: [] });
  });

  it('is refused for a task of an existing agent too, which keeps running its own config', async () => {
    const agentId = uniqueId('existing');
    const ok = scriptedConfig(DONE, inside(), { tools: narrow });
    const first = await h.agents.submit(agentId, { goal: 'within the policy', config: ok });
    expect(await h.agents.waitForTask(agentId, first.taskId)).toMatchObject({ outcome: 'COMPLETED', finalText: 'Done.' });

    const wide = scriptedConfig(DONE, inside(), { tools: { ...narrow, shellAllow: ['sh'] } });
    await expect(h.agents.submitExisting(agentId, { goal: 'now widen it', config: wide })).rejects.toThrow(/tools.shellAllow: 'sh'/);
    const second = await h.agents.submitExisting(agentId, { goal: 'again within the policy' });
    expect(await h.agents.waitForTask(agentId, second.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    expect((await h.agents.status(agentId)).tasks.map((t) => t.taskId)).toEqual([first.taskId, second.taskId]);
  });
});
