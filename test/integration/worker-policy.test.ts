/**
 * The worker's operator sets the outer limits; a task may only narrow them. A worker with a narrow
 * policy refuses, at submit, every task config wider than it — workspace roots, shell commands, hosts,
 * LLM endpoints and files, output cap — with a typed Refused failure naming the field, before anything
 * is queued (a new agent refused so is not left behind); a config within the policy runs, what it
 * leaves unset is the worker's own, and the worker's LLM key goes only to the worker's own endpoint.
 * A suspended task whose config a narrower policy no longer allows is not resumed: the refusal says
 * what helps.
 */
import os from 'node:os';
import path from 'node:path';
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { NotFoundError, RefusedError } from '../../client/agent-client';
import { parseAgentConfig, type AgentConfigInput } from '../../core/config';
import { parseWorkerPolicy, type WorkerPolicyInput } from '../../core/worker-policy';
import { openAiCompletion, startFakeServer, type FakeServer } from '../helpers/fake-llm-server';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { llmRequests, settledHistory } from '../helpers/workflow-history';

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
  allowedLlm = await startFakeServer(() => ({
    json: openAiCompletion({ text: 'Done.', usage: { prompt: 10, completion: 2 } }),
  }));
  const policy = parseWorkerPolicy({
    roots: [allowed],
    llmDirs: [path.dirname(DONE), scripts],
    llmAllow: [new URL(allowedLlm.url).host],
    shellAllow: ['ls', 'cat'],
    httpAllow: ['127.0.0.1:8080'],
    maxOutputBytes: 10_000,
    allowRoot: true,
  });
  h = await startHarness({
    name: 'worker-policy',
    activities: { policy, llm: { openai: { apiKey: WORKER_KEY, baseUrl: 'https://api.openai.com/v1' } } },
  });
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
    [
      'a workspace root outside the allowed roots',
      () => scriptedConfig(DONE, realpathSync(os.tmpdir()), { tools: narrow }),
      /workspace: '.*' is not inside a root the worker allows/,
    ],
    [
      'a workspace root that is a symlink out of the allowed roots',
      () => {
        const link = path.join(allowed, uniqueId('escape'));
        symlinkSync(realpathSync(os.tmpdir()), link);
        return scriptedConfig(DONE, link, { tools: narrow });
      },
      /resolves to .*, outside every root the worker allows/,
    ],
    [
      'a shell command the worker does not allow',
      () => scriptedConfig(DONE, inside(), { tools: { ...narrow, shellAllow: ['ls', 'sh'] } }),
      /tools.shellAllow: 'sh' not allowed by the worker/,
    ],
    [
      'a host the worker does not allow',
      () => scriptedConfig(DONE, inside(), { tools: { ...narrow, httpAllow: ['127.0.0.1:7233'] } }),
      /tools.httpAllow: '127.0.0.1:7233' not allowed/,
    ],
    [
      'any port of an allowed host',
      () => scriptedConfig(DONE, inside(), { tools: { ...narrow, httpAllow: ['127.0.0.1:*'] } }),
      /tools.httpAllow: '127.0.0.1:\*'/,
    ],
    [
      'an MCP server the worker does not start',
      () =>
        scriptedConfig(DONE, inside(), {
          tools: { ...narrow, mcp: { files: { command: 'node', args: ['server.js'] } } },
        }),
      /tools.mcp.files: the command 'node' is not one the worker starts as an MCP server \(allowed: none\)/,
    ],
    [
      'an MCP server on a host the worker does not allow',
      () =>
        scriptedConfig(DONE, inside(), {
          tools: { ...narrow, mcp: { remote: { url: 'https://mcp.example.com/mcp' } } },
        }),
      /tools.mcp.remote: the host of 'https:\/\/mcp.example.com\/mcp' is not allowed by the worker \(allowed: 127.0.0.1:8080\)/,
    ],
    [
      'a worker secret the policy does not pass to MCP servers',
      () =>
        scriptedConfig(DONE, inside(), {
          tools: {
            ...narrow,
            mcp: {
              local: {
                url: 'http://127.0.0.1:8080/mcp',
                headers: { Authorization: 'Bearer ${env:AWS_SECRET_ACCESS_KEY}' },
              },
            },
          },
        }),
      /tools.mcp.local: \$\{env:AWS_SECRET_ACCESS_KEY\} is not a variable the worker passes to MCP servers \(allowed: none\)/,
    ],
    [
      'a larger output cap',
      () => scriptedConfig(DONE, inside(), { tools: { ...narrow, maxOutputBytes: 20_000 } }),
      /tools.maxOutputBytes: 20000 is above the worker's cap 10000/,
    ],
    [
      "an LLM endpoint of the submitter's choosing",
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
    // Nothing was queued or run, and no agent is left behind: the one the submit started has ended.
    await expect(h.agents.status(agentId)).rejects.toBeInstanceOf(NotFoundError);
    expect((await h.agents.listAgents({ pageSize: 200 })).agents.map((a) => a.agentId)).not.toContain(agentId);
  });

  it('is refused for a task of an existing agent too, which keeps running its own config', async () => {
    const agentId = uniqueId('existing');
    const ok = scriptedConfig(DONE, inside(), { tools: narrow });
    const first = await h.agents.submit(agentId, { goal: 'within the policy', config: ok });
    expect(await h.agents.waitForTask(agentId, first.taskId)).toMatchObject({
      outcome: 'COMPLETED',
      finalText: 'Done.',
    });

    const wide = scriptedConfig(DONE, inside(), { tools: { ...narrow, shellAllow: ['sh'] } });
    await expect(h.agents.submitExisting(agentId, { goal: 'now widen it', config: wide })).rejects.toThrow(
      /tools.shellAllow: 'sh'/,
    );
    const second = await h.agents.submitExisting(agentId, { goal: 'again within the policy' });
    expect(await h.agents.waitForTask(agentId, second.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    expect((await h.agents.status(agentId)).tasks.map((t) => t.taskId)).toEqual([first.taskId, second.taskId]);
  });
});

describe('the LLM endpoints a task may name', () => {
  it('sends nothing to a listener the policy does not allow: the submit is refused and the listener hears nothing', async () => {
    const agentId = uniqueId('listener');
    await expect(
      h.agents.submit(agentId, {
        goal: 'call home',
        config: parseAgentConfig({ workspace: [inside()], tools: narrow }, `openai:gpt@${listener.url}/v1`),
      }),
    ).rejects.toBeInstanceOf(RefusedError);
    expect(listener.requests).toHaveLength(0);
  });

  it("runs a task against an allowed endpoint without the worker's key, which belongs to another endpoint", async () => {
    const agentId = uniqueId('keyless');
    const config = parseAgentConfig(
      { workspace: [inside()], tools: narrow, verify: false },
      `openai:local-model@${allowedLlm.url}/v1`,
    );
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
      const submitted = h.agents.submit(uniqueId('script'), {
        goal: 'read it',
        config: parseAgentConfig({ workspace: [inside()], tools: narrow }, `scripted:${file}`),
      });
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

/** A scripted controller in the allowed root, where the policies below let the worker read it. */
function scriptInRoot(turns: unknown[]): string {
  const file = path.join(allowed, `${uniqueId('turns')}.json`);
  writeFileSync(file, JSON.stringify({ turns }));
  return file;
}
const configIn = (turns: unknown[], overrides: AgentConfigInput = {}) =>
  parseAgentConfig({ workspace: [inside()], verify: false, ...overrides }, `scripted:${scriptInRoot(turns)}`);
const policyOf = (overrides: Partial<WorkerPolicyInput>) =>
  parseWorkerPolicy({ roots: [allowed], allowRoot: true, ...overrides });

describe('what a task config leaves unset', () => {
  it("is the worker's own: the shell commands and the output cap of its policy, never wider defaults", async () => {
    const agentId = uniqueId('defaults');
    const config = configIn([
      {
        toolCalls: [
          { name: 'shell.run', args: { command: 'ls' } },
          { name: 'shell.run', args: { command: 'echo', args: ['hi'] } },
          { name: 'fs.read', args: { path: 'big.txt' } },
        ],
      },
      { text: 'Done.' },
    ]);
    writeFileSync(path.join(config.workspace[0]!, 'big.txt'), 'b'.repeat(20_000));
    expect(config.tools).not.toHaveProperty('shellAllow');
    const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'look around', config });
    const result = await h.agents.waitForTask(agentId, taskId);
    expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'Done.' });
    // The worker's list: ls runs, echo (a command of the old config default) does not, and says what does.
    expect(result.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([
      ['shell.run', 'ok', undefined],
      ['shell.run', 'failed', 'EPERM'],
      ['fs.read', 'failed', 'E_OUTPUT_TOO_LARGE'],
    ]);
    expect(result.toolCalls[1]?.error?.suggestion).toMatch(/^Allowed commands: ls, cat\./);
    // The worker's cap (10000), not the config default's 64 KiB.
    expect(result.toolCalls[2]?.error?.message).toMatch(/10000 bytes/);
    // The model is told the worker's list.
    const [first] = await llmRequests(await settledHistory(h.agents.client, workflowId));
    expect(first?.messages[0]).toMatchObject({
      role: 'system',
      text: expect.stringContaining('shell.run starts only these commands: ls, cat.'),
    });
  });
});

describe('unlock --resume after the worker policy narrowed', () => {
  it('resumes a task whose config left shellAllow to the worker, and refuses one that asked for more, keeping it suspended and saying what helps', async () => {
    const wide = await startHarness({
      name: 'policy-before',
      activities: { policy: policyOf({ shellAllow: ['ls', 'cat'] }) },
    });
    const narrowed = { policy: policyOf({ shellAllow: ['ls'] }) };
    let after: Harness | undefined;
    try {
      // Each lists the workspace, then the loop cap (1 tick) suspends it before its answer.
      const turns = [{ toolCalls: [{ name: 'shell.run', args: { command: 'ls' } }] }, { text: 'Done.' }];
      const [own, asked] = [uniqueId('resume-own'), uniqueId('resume-asked')];
      const submitted = await Promise.all([
        wide.agents.submit(own, { goal: 'list, then answer', config: configIn(turns, { safety: { maxTicks: 1 } }) }),
        wide.agents.submit(asked, {
          goal: 'list, then answer',
          config: configIn(turns, { safety: { maxTicks: 1 }, tools: { shellAllow: ['ls', 'cat'] } }),
        }),
      ]);
      for (const [i, agentId] of [own, asked].entries()) {
        expect(await wide.agents.waitForTask(agentId, submitted[i]!.taskId)).toMatchObject({
          outcome: 'SUSPENDED',
          agentState: 'SAFETY_LOCKOUT',
          reason: { code: 'LOOP_CAP' },
        });
      }
      await wide.stop();

      // The operator narrows the policy: the same task queue, a new worker.
      after = await startHarness({ name: 'policy-after', taskQueue: wide.taskQueue, activities: narrowed });
      await after.agents.unlock(own, { resume: true });
      expect(
        await after.agents.waitForTask(own, submitted[0]!.taskId, { after: (r) => r.outcome !== 'SUSPENDED' }),
      ).toMatchObject({ outcome: 'COMPLETED', finalText: 'Done.' });

      const refused = after.agents.unlock(asked, { resume: true });
      await expect(refused).rejects.toBeInstanceOf(RefusedError);
      await expect(refused).rejects.toThrow(
        /task task-1 cannot resume: the worker's policy no longer allows its config\. It stays suspended/,
      );
      await expect(refused).rejects.toThrow(
        new RegExp(`\`starry unlock ${asked}\` without --resume ends the task ABORTED`),
      );
      await expect(refused).rejects.toThrow(/tools\.shellAllow: 'cat' not allowed by the worker \(allowed: ls\)/);
      expect(await after.agents.status(asked)).toMatchObject({
        agentState: 'SAFETY_LOCKOUT',
        suspendedTask: { taskId: 'task-1' },
      });

      // What the refusal says helps: unlock without resume, then the goal again within the policy.
      expect((await after.agents.unlock(asked)).message).toMatch(/task task-1 ended ABORTED/);
      // Its loop cap of 1 is the agent's now: only an admin raises it for the goal's second run.
      await after.agents.setLimits(asked, { safety: { maxTicks: 50 }, by: 'ops' });
      const again = await after.agents.submit(asked, { goal: 'list, then answer', config: configIn(turns) });
      expect(await after.agents.waitForTask(asked, again.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    } finally {
      await after?.stop();
      await wide.stop().catch(() => undefined);
    }
  });
});
