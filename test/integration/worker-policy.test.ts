/**
 * The worker's operator sets the outer limits; a task may only narrow them. A worker with a narrow
 * policy refuses, at submit, every task config wider than it — workspace roots, shell commands, hosts,
 * LLM endpoints and files, output cap — with a typed Refused failure naming the field, before anything
 * is queued; a config within the policy runs, and the worker's LLM key goes only to the worker's own
 * endpoint.
 */
import os from 'node:os';
import path from 'node:path';
import { mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import { RefusedError } from '../../client/agent-client';
import { parseAgentConfig } from '../../core/config';
import { parseWorkerPolicy } from '../../core/worker-policy';
import { openAiCompletion, startFakeServer, type FakeServer } from '../helpers/fake-llm-server';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';

let h: Harness;
/** A listener of the submitter's choosing: it must hear nothing. */
let listener: FakeServer;
/** An OpenAI-compatible server the policy allows, which is not the endpoint the worker's key belongs to. */
let allowedLlm: FakeServer;
const allowed = realpathSync(makeWorkspace());
const scripts = path.dirname(writeScript([{ text: 'unused' }]));
const DONE = writeScript([{ text: 'Done.' }]);
const WORKER_KEY = 'sk-worker-secret-4b1d';

beforeAll(async () => {
  listener = await startFakeServer(() => ({ json: openAiCompletion({ text: 'pwned' }) }));
  allowedLlm = await startFakeServer(() => ({ json: openAiCompletion({ text: 'Done.', usage: { prompt: 10, completion: 2 } }) }));
  const policy = parseWorkerPolicy({
    roots: [allowed],
    llmDirs: [path.dirname(DONE), scripts],
    llmAllow: [new URL(allowedLlm.url).host],
    shellAllow: ['ls', 'cat'],
    httpAllow: ['127.0.0.1:8080'],
    maxOutputBytes: 10_000,
    allowRoot: true,
  });
  h = await startHarness({ name: 'worker-policy', activities: { policy, llm: { openai: { apiKey: WORKER_KEY, baseUrl: 'https://api.openai.com/v1' } } } });
});
afterAll(async () => {
  await h?.stop();
  await listener?.close();
  await allowedLlm?.close();
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
    [
      'an LLM endpoint of the submitter\'s choosing',
      () => parseAgentConfig({ workspace: [inside()], tools: narrow }, `openai:gpt@${listener.url}/v1`),
      /llm: the host of 'http:\/\/127\.0\.0\.1:\d+\/v1' is not one the worker's LLM calls may reach \(llmAllow: 127\.0\.0\.1:\d+\)/,
    ],
    [
      'a script outside the roots and llmDirs (the worker policy file, say)',
      () => parseAgentConfig({ workspace: [inside()], tools: narrow }, 'scripted:/etc/starry/policy.json'),
      /llm: the script '\/etc\/starry\/policy.json' is not an absolute path inside a directory the worker reads scripts from/,
    ],
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

describe('the LLM endpoints a task may name', () => {
  it('sends nothing to a listener the policy does not allow: the submit is refused and the listener hears nothing', async () => {
    const agentId = uniqueId('listener');
    await expect(h.agents.submit(agentId, { goal: 'call home', config: parseAgentConfig({ workspace: [inside()], tools: narrow }, `openai:gpt@${listener.url}/v1`) })).rejects.toBeInstanceOf(RefusedError);
    expect(listener.requests).toHaveLength(0);
  });

  it('runs a task against an allowed endpoint without the worker\'s key, which belongs to another endpoint', async () => {
    const agentId = uniqueId('keyless');
    const config = parseAgentConfig({ workspace: [inside()], tools: narrow, verify: false }, `openai:local-model@${allowedLlm.url}/v1`);
    const { taskId } = await h.agents.submit(agentId, { goal: 'answer', config });
    expect(await h.agents.waitForTask(agentId, taskId)).toMatchObject({ outcome: 'COMPLETED', finalText: 'Done.' });
    expect(allowedLlm.requests.length).toBeGreaterThan(0);
    for (const req of allowedLlm.requests) {
      expect(req.headers.authorization).toBeUndefined();
      expect(JSON.stringify(req)).not.toContain(WORKER_KEY);
    }
  });

  it('refuses a script outside in the same words whether the file exists or not', async () => {
    const refusal = async (file: string) => {
      const submitted = h.agents.submit(uniqueId('script'), { goal: 'read it', config: parseAgentConfig({ workspace: [inside()], tools: narrow }, `scripted:${file}`) });
      const err = await submitted.then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err).toBeInstanceOf(RefusedError);
      return (err as Error).message;
    };
    const existing = await refusal('/etc/passwd');
    const missing = await refusal('/etc/no-such-file');
    expect(missing.replace('/etc/no-such-file', '/etc/passwd')).toBe(existing);
    expect(existing).not.toMatch(/root:|exist|ENOENT|JSON/);
  });
});

