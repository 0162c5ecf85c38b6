/**
 * The `starry` CLI as a user meets it (docs/ARCHITECTURE.md#configuration): the compiled bin against the test server,
 * with its
 * embedded worker. Exit codes: 0 completed, 1 failed, 2 locked/stopped/refused, 64 usage.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import {
  address,
  makeWorkspace,
  privateDir,
  startHarness,
  tenantDir,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { eventually } from '../../dev/poll';
import { taskWorkflowId } from '../../workflows/messages';
import { isActivityRunning } from '../helpers/workflow-history';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';
import { freePort, isListening, startDevServer } from '../../dev/dev-server';

jest.setTimeout(180_000);

const bin = path.join(projectRoot(), 'bin', 'starry.js');
/** This file's own task queue: no worker polls it unless a test starts one, so `run` embeds its own (`always`). */
const QUEUE = uniqueId('cli');

/**
 * The CLI's environment against the run's server, which this folder's `starry dev` did not start: `run`
 * embeds a worker there only when told to (`--worker always`, here as STARRY_RUN_WORKER), and then changes
 * no routing (test/integration/take-over.test.ts).
 */
function envFor(queue: string, extra: NodeJS.ProcessEnv = {}) {
  return {
    ...process.env,
    TEMPORAL_ADDRESS: address(),
    STARRY_TASK_QUEUE: queue,
    STARRY_RUN_WORKER: 'always',
    ...extra,
  };
}

// What an attacker puts in a goal, a message, a note, model text or tool output to act on the reader's
// terminal: colours, a bell, an OSC 8 link, an OSC 52 clipboard write, a C1 CSI that clears the screen.
const EVIL =
  '\x1b[31mred\x1b[0m \x07 \x1b]8;;https://evil.example/\x07link\x1b]8;;\x07 \x1b]52;c;cm0gLXJmIH4K\x07 \u009b2J';
/** How EVIL prints: every control character escaped visibly. */
const EVIL_SHOWN =
  '\\x1b[31mred\\x1b[0m \\x07 \\x1b]8;;https://evil.example/\\x07link\\x1b]8;;\\x07 \\x1b]52;c;cm0gLXJmIH4K\\x07 \\u009b2J';
/** Any character a terminal acts on, but newline and tab. */
// eslint-disable-next-line no-control-regex -- finding raw control characters is the point
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

function starry(args: string[], queue = QUEUE): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { env: envFor(queue), encoding: 'utf8', timeout: 90_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** `starry` without blocking this process: needed while a worker runs in it (spawnSync would starve it). */
async function starryAsync(
  args: string[],
  queue: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = starryLive(args, queue, env);
  const code = await p.exited;
  return { code, ...p.out() };
}

/** A `starry` process to talk to while it runs: wait for its output, interrupt it, await its exit. */
function starryLive(args: string[], queue: string, env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [bin, ...args], { env: envFor(queue, env) });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<number>((resolve) => child.on('exit', (code, sig) => resolve(code ?? (sig ? 128 : -1))));
  const until = async (what: 'stdout' | 'stderr', re: RegExp) => {
    for (let i = 0; i < 1200 && !re.test(what === 'stdout' ? stdout : stderr); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(what === 'stdout' ? stdout : stderr).toMatch(re);
  };
  return { child, exited, until, out: () => ({ stdout, stderr }) };
}

/** A worker polling `queue` for the duration of a describe block (as `starry dev` would). */
function withWorkerOn(queue: string): () => Harness {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ name: 'cli-worker', taskQueue: queue });
  });
  afterAll(async () => {
    await h?.stop();
  });
  return () => h;
}

describe('starry run', () => {
  it('prints each tick as it happens: the model text, tool calls and results, the pain, then the outcome', () => {
    const r = starry([
      'run',
      'Tell me what /root/secret.txt says.',
      '--agent',
      uniqueId('cli-live'),
      '--config',
      path.join(projectRoot(), 'examples/eperm/agent.json'),
    ]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    expect(at(/^tick 1 · 220 tokens$/)).toBeGreaterThanOrEqual(0);
    expect(at(/│ I will read the secret file\./)).toBeGreaterThan(at(/^tick 1 /));
    expect(at(/→ fs\.read \{"path":"\/root\/secret\.txt"\}/)).toBeGreaterThan(at(/^tick 1 /));
    expect(at(/← fs\.read FAILED EPERM/)).toBeGreaterThan(at(/→ fs\.read \{"path":"\/root/));
    expect(at(/⤷ pain:/)).toBeGreaterThan(at(/← fs\.read FAILED EPERM/));
    expect(at(/【System Pain Alert】/)).toBeGreaterThan(at(/⤷ pain:/));
    expect(at(/^tick 2 /)).toBeGreaterThan(at(/【System Pain Alert】/));
    expect(at(/^outcome COMPLETED · agent WAITING_FOR_EVENT$/)).toBeGreaterThan(at(/^tick 4 /));
  });

  it('detaches at once on Ctrl-C, says the task goes on and how to follow, halt or resume it', async () => {
    const agent = uniqueId('cli-detach');
    const live = starryLive(
      [
        'run',
        'slow',
        '--agent',
        agent,
        '--llm',
        `scripted:${writeScript([{ delayMs: 60_000, text: 'slow' }])}`,
        '--workspace',
        makeWorkspace(),
      ],
      uniqueId('cli-detach-q'),
    );
    await live.until('stderr', /submitted task-1/);
    live.child.kill('SIGINT');
    expect(await live.exited).toBe(130);
    const { stderr } = live.out();
    expect(stderr).toMatch(/detached from task-1 of agent .*; the task goes on/);
    expect(stderr).toMatch(new RegExp(`starry watch ${agent}`));
    expect(stderr).toMatch(new RegExp(`starry halt ${agent}`));
    expect(stderr).toMatch(new RegExp(`starry logs agent-${agent}-task-1`));
    expect(stderr).not.toMatch(/Failed to query/);
  });

  it('prints the contract JSON for the EPERM scenario and exits 0', () => {
    const agent = uniqueId('cli');
    const r = starry([
      'run',
      'Tell me what /root/secret.txt says.',
      '--agent',
      agent,
      '--config',
      path.join(projectRoot(), 'examples/eperm/agent.json'),
      '--json',
    ]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const result = JSON.parse(lines[0] as string);
    expect(Object.keys(result).sort()).toEqual(
      [
        'agentId',
        'agentState',
        'finalText',
        'injections',
        'outcome',
        'taskId',
        'ticks',
        'tokensUsed',
        'toolCalls',
        'transcript',
        'workflowId',
      ].sort(),
    );
    expect(result).toMatchObject({
      agentId: agent,
      taskId: 'task-1',
      workflowId: `agent-${agent}-task-1`,
      outcome: 'COMPLETED',
      agentState: 'WAITING_FOR_EVENT',
      ticks: 5,
    });
    // The example runs with the defaults, so the verification step asked once more after tick 4.
    expect(result.injections.map((i: { kind: string }) => i.kind)).toEqual(['PAIN', 'VERIFY']);
    expect(result.toolCalls[0]).toMatchObject({
      tick: 1,
      name: 'fs.read',
      status: 'failed',
      error: { code: 'EPERM', kind: 'execution', source: 'fs.read' },
    });
    expect(result.injections[0].kind).toBe('PAIN');
  });

  it("escapes the control characters of the goal, the model's text and a tool's arguments and error in run and logs, and keeps them JSON-escaped with --json", () => {
    const agent = uniqueId('cli-escapes');
    const script = writeScript([
      { text: `thinking ${EVIL}`, toolCalls: [{ name: 'fs.read', args: { path: `${EVIL}.txt` } }] },
      { text: `answer ${EVIL}` },
    ]);
    const r = starry([
      'run',
      `goal ${EVIL}`,
      '--agent',
      agent,
      '--llm',
      `scripted:${script}`,
      '--workspace',
      makeWorkspace(),
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain(`│ thinking ${EVIL_SHOWN}`);
    expect(r.stdout).toContain('→ fs.read {"path":"\\u001b[31mred');
    expect(r.stdout).toMatch(/← fs\.read FAILED ENOENT: .*\\u001b\[31mred|← fs\.read FAILED ENOENT: .*\\x1b\[31mred/);
    expect(r.stdout).toContain(`final answer: answer ${EVIL_SHOWN}`);

    for (const args of [
      ['logs', taskWorkflowId(agent, 'task-1')],
      ['logs', taskWorkflowId(agent, 'task-1'), '--transcript'],
    ]) {
      const logs = starry(args);
      expect([args, logs.code]).toEqual([args, 0]);
      expect(logs.stdout).not.toMatch(RAW_CONTROL);
      expect(logs.stdout).toContain(`answer ${EVIL_SHOWN}`);
    }
    expect(starry(['logs', taskWorkflowId(agent, 'task-1'), '--transcript']).stdout).toContain(
      `[user]\ngoal ${EVIL_SHOWN}\n`,
    );

    const json = starry(['logs', taskWorkflowId(agent, 'task-1'), '--json']);
    expect(json.stdout).not.toMatch(RAW_CONTROL);
    expect(json.stdout).toContain('\\u009b2J');
    expect(JSON.parse(json.stdout).finalText).toBe(`answer ${EVIL}`);
  });

  it('exits 1 when the task fails', () => {
    const script = writeScript([{ error: { status: 400, message: 'bad request from the model' } }]);
    const r = starry([
      'run',
      'fail',
      '--agent',
      uniqueId('cli-fail'),
      '--llm',
      `scripted:${script}`,
      '--workspace',
      makeWorkspace(),
      '--json',
    ]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ outcome: 'FAILED', error: { code: 'EINVAL' } });
  });
});

describe('with a worker polling (as under `starry dev`)', () => {
  const queue = uniqueId('cli-dev');
  const harness = withWorkerOn(queue);

  it('exits 2 with a SUSPENDED result when a breaker locks the agent, refuses the next task, and unlocks', async () => {
    const agent = uniqueId('cli-lock');
    const script = writeScript([
      { toolCalls: [{ name: 'fs.list', args: {} }] },
      { toolCalls: [{ name: 'fs.list', args: {} }] },
      { text: 'never reached' },
    ]);
    const ws = makeWorkspace();
    const config = path.join(ws, '..', `${path.basename(ws)}-agent.json`);
    writeFileSync(config, JSON.stringify({ llm: `scripted:${script}`, workspace: [ws], safety: { maxTicks: 1 } }));

    const run = await starryAsync(['run', 'loop forever', '--agent', agent, '--config', config, '--json'], queue);
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({
      outcome: 'SUSPENDED',
      agentState: 'SAFETY_LOCKOUT',
      reason: { code: 'LOOP_CAP' },
      ticks: 1,
    });

    const refused = await starryAsync(['run', 'another task', '--agent', agent, '--config', config, '--json'], queue);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/task refused: agent .* is SAFETY_LOCKOUT \(LOOP_CAP: .*\).*starry unlock/);

    const status = await starryAsync(['status', agent, '--json'], queue);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      agentState: 'SAFETY_LOCKOUT',
      suspendedTask: { taskId: 'task-1' },
    });

    // `starry list` reads the visibility store (eventually consistent): the agent shows as locked.
    const listed = async (state: string) =>
      JSON.parse((await starryAsync(['list', '--state', state, '--json'], queue)).stdout).agents.map(
        (a: { agentId: string }) => a.agentId,
      ) as string[];
    await eventually(
      'listed as locked',
      async () => ((await listed('SAFETY_LOCKOUT')).includes(agent) ? true : undefined),
      30_000,
      200,
    );

    const unlock = await starryAsync(['unlock', agent, '--note', 'checked the loop', '--by', 'jest'], queue);
    expect(unlock.code).toBe(0);
    expect(unlock.stdout).toMatch(/unlocked from SAFETY_LOCKOUT \(LOOP_CAP\); task task-1 ended ABORTED/);

    const again = await starryAsync(['unlock', agent], queue);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/is not locked \(WAITING_FOR_EVENT\): nothing to unlock/);

    // Once unlocked, nothing of this agent matches AgentState="SAFETY_LOCKOUT" any more: not the agent,
    // and not its closed task (tasks drop AgentState when they close).
    await eventually(
      'no longer listed as locked',
      async () => {
        const stale = [];
        for await (const w of harness().agents.client.workflow.list({
          query: `AgentState = 'SAFETY_LOCKOUT' AND AgentId = '${agent}'`,
        }))
          stale.push(w.workflowId);
        return stale.length === 0 ? true : undefined;
      },
      30_000,
      200,
    );
    expect(await listed('SAFETY_LOCKOUT')).not.toContain(agent);
    expect(await listed('WAITING_FOR_EVENT')).toContain(agent);
  });

  it("refuses a task config that raises the agent's budget (exit 2, naming the field) until an admin raises it with starry limits", async () => {
    const agent = uniqueId('cli-limits');
    const done = { text: 'Done.', usage: { inputTokens: 10, outputTokens: 5 } };
    const llm = `scripted:${writeScript([done, done, done])}`;
    const ws = makeWorkspace();
    const configWith = (name: string, safety: Record<string, number>) => {
      const file = path.join(ws, '..', `${path.basename(ws)}-${name}.json`);
      writeFileSync(file, JSON.stringify({ llm, workspace: [ws], verify: false, safety }));
      return file;
    };
    const first = await starryAsync(
      ['run', 'first', '--agent', agent, '--config', configWith('first', { tokenBudget: 1000 })],
      queue,
    );
    expect(first.code).toBe(0);

    const raised = configWith('raised', { tokenBudget: 1_000_000_000 });
    const refused = await starryAsync(['submit', 'spend more', '--agent', agent, '--config', raised], queue);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^starry: task refused: raising tokenBudget needs admin: .*\\n {2}- safety\\.tokenBudget: 1000000000 is looser than agent ${agent}'s limit 1000; raising tokenBudget needs admin\\n.*starry limits ${agent} --token-budget 1000000000`,
      ),
    );

    const limits = await starryAsync(
      ['limits', agent, '--token-budget', '1000000000', '--by', 'alice', '--note', 'the big job', '--json'],
      queue,
    );
    expect(limits.code).toBe(0);
    expect(JSON.parse(limits.stdout)).toMatchObject({
      changed: ['tokenBudget'],
      limits: { tokenBudget: 1_000_000_000 },
    });
    const accepted = await starryAsync(['run', 'spend more', '--agent', agent, '--config', raised, '--json'], queue);
    expect(accepted.code).toBe(0);
    const status = await starryAsync(['status', agent], queue);
    expect(status.stdout).toContain('limits changed by alice: tokenBudget 1000 → 1000000000 (the big job)');
    const shown = await starryAsync(['limits', agent], queue);
    expect(shown.stdout).toMatch(/^maxTicks 50\ntokenBudget 1000000000\n/);

    const notANumber = await starryAsync(['limits', agent, '--max-ticks', 'many'], queue);
    expect(notANumber).toMatchObject({
      code: 64,
      stderr: expect.stringContaining('must be a whole number > 0; got "many"'),
    });
    const above = await starryAsync(['limits', agent, '--max-ticks', '100001'], queue);
    expect(above).toMatchObject({ code: 64, stderr: expect.stringContaining('safety.maxTicks: must be <= 100000') });
  });

  it('prints a 100 KB answer whole when stdout is a pipe', () => {
    const answer = 'a'.repeat(100_000);
    const r = starry([
      'run',
      'answer at length',
      '--agent',
      uniqueId('cli-big'),
      '--llm',
      `scripted:${writeScript([{ text: answer }])}`,
      '--workspace',
      makeWorkspace(),
      '--json',
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).finalText).toBe(answer);
  });

  describe('a task halted mid-call, after a message and a halt note holding terminal escapes', () => {
    const agent = uniqueId('cli-halted');
    const workflowId = taskWorkflowId(agent, 'task-1');
    beforeAll(async () => {
      const config = {
        llm: `scripted:${writeScript([{ toolCalls: [{ name: 'fs.list', args: {} }] }, { delayMs: 60_000, text: 'never' }])}`,
        workspace: [makeWorkspace()],
      };
      expect(
        (await starryAsync(['submit', `goal ${EVIL}`, '--agent', agent, '--config', writeConfig(config)], queue)).code,
      ).toBe(0);
      await eventually('the second LLM call in flight', async () =>
        (await harness().agents.status(agent)).currentTask?.tick === 2 &&
        (await isActivityRunning(harness().agents.client, workflowId, 'llm'))
          ? true
          : undefined,
      );
      expect((await starryAsync(['message', agent, `message ${EVIL}`, '--by', 'jest'], queue)).code).toBe(0);
      expect((await starryAsync(['halt', agent, '--note', `note ${EVIL}`, '--by', 'jest'], queue)).code).toBe(0);
      expect(await harness().agents.waitForTask(agent, 'task-1')).toMatchObject({ outcome: 'CANCELLED' });
    });

    it('prints what the task ran with `logs`, its CANCELLED outcome, and exits 0', async () => {
      const logs = await starryAsync(['logs', workflowId], queue);
      expect(logs).toMatchObject({ code: 0, stderr: '' });
      expect(logs.stdout).toMatch(/^tick 1 · \d+ tokens\n {2}→ fs\.list \{\}\n {2}← fs\.list ok\n/);
      expect(logs.stdout).toContain(`  ✉ message from jest: message ${EVIL_SHOWN}\n`);
      expect(logs.stdout).toMatch(
        / {2}task workflow canceled\noutcome CANCELLED · agent STOPPED \(SYSTEM_HALT: .*\)\n2 tick\(s\) · \d+ tokens · 1 tool call\(s\)\n/,
      );
      expect(logs.stdout).not.toMatch(RAW_CONTROL);

      const json = await starryAsync(['logs', workflowId, '--json'], queue);
      expect(json.code).toBe(0);
      expect(json.stdout).not.toMatch(RAW_CONTROL);
      expect(JSON.parse(json.stdout)).toMatchObject({
        outcome: 'CANCELLED',
        toolCalls: [{ name: 'fs.list', status: 'ok' }],
      });
    });

    it('prints its transcript with `logs --transcript`, the goal escaped', async () => {
      const transcript = await starryAsync(['logs', workflowId, '--transcript'], queue);
      expect(transcript).toMatchObject({ code: 0, stderr: '' });
      expect(transcript.stdout).toMatch(
        new RegExp(
          `\\[user\\]\\ngoal ${EVIL_SHOWN.replace(/[\\[\]().*+?^$|{}]/g, '\\$&')}\\n[\\s\\S]*\\[assistant\\]\\n {2}→ fs\\.list \\{\\}`,
        ),
      );
      expect(transcript.stdout).not.toMatch(RAW_CONTROL);
    });

    it('refuses the next task naming the halt once, as the agent state says it', async () => {
      const refused = await starryAsync(['submit', 'after the halt', '--agent', agent], queue);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toBe(
        `starry: task refused: agent ${agent} is STOPPED (SYSTEM_HALT by jest: note ${EVIL_SHOWN}) and refuses tasks until a human unlocks it: starry unlock ${agent}\n`,
      );
    });

    it('escapes the halt note in `status` and `watch`, and keeps it JSON-escaped in `status --json`', async () => {
      const status = await starryAsync(['status', agent], queue);
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(`agent ${agent}: STOPPED (SYSTEM_HALT by jest: note ${EVIL_SHOWN})\n`);
      expect(status.stdout).not.toMatch(RAW_CONTROL);
      const json = await starryAsync(['status', agent, '--json'], queue);
      expect(json.stdout).not.toMatch(RAW_CONTROL);
      expect(JSON.parse(json.stdout).reason.message).toBe(`SYSTEM_HALT by jest: note ${EVIL}`);

      const watch = starryLive(['watch', agent], queue);
      await watch.until('stdout', /STOPPED/);
      watch.child.kill('SIGINT');
      await watch.exited;
      expect(watch.out().stdout).toContain(`agent ${agent}: STOPPED (SYSTEM_HALT by jest: note ${EVIL_SHOWN})\n`);
      expect(watch.out().stdout).not.toMatch(RAW_CONTROL);
    });
  });

  it('lists a call that waits for approval in `approvals`, `status` and the live view, and approves or denies it by name', async () => {
    const agent = uniqueId('cli-approve');
    const turns = [
      { toolCalls: [{ name: 'fs.write', args: { path: 'a.md', content: 'one' } }] },
      { toolCalls: [{ name: 'fs.write', args: { path: 'b.md', content: 'two' } }] },
      { text: 'Done.' },
    ];
    const config = writeConfig({
      llm: `scripted:${writeScript(turns)}`,
      workspace: [makeWorkspace()],
      verify: false,
      tools: { approval: { ask: ['fs.write'] } },
    });
    const run = starryLive(['run', 'write two files', '--agent', agent, '--config', config], queue);
    try {
      await run.until(
        'stdout',
        new RegExp(
          `⏸ t1\\.0 fs\\.write \\{"path":"a\\.md","content":"one"\\} waits for approval \\(rule fs\\.write\\): \`starry approve ${agent} t1\\.0\``,
        ),
      );
      const listed = await starryAsync(['approvals', agent], queue);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toMatch(
        new RegExp(`^${agent} t1\\.0 · fs\\.write \\{"path":"a\\.md","content":"one"\\}\n`),
      );
      expect(listed.stdout).toContain(`  starry approve ${agent} t1.0\n  starry deny ${agent} t1.0 --reason "…"\n`);
      expect(JSON.parse((await starryAsync(['approvals', agent, '--json'], queue)).stdout)).toMatchObject({
        approvals: [{ agentId: agent, callId: 't1.0', tool: 'fs.write' }],
      });
      const status = await starryAsync(['status', agent], queue);
      expect(status.stdout).toMatch(/: WAITING_FOR_APPROVAL\n/);
      expect(status.stdout).toContain(`waiting for approval t1.0: fs.write`);

      expect((await starryAsync(['approve', agent, 't1.0', '--args', 'not json'], queue)).code).toBe(64);
      const wrong = await starryAsync(['approve', agent, 't9.0'], queue);
      expect([wrong.code, wrong.stderr]).toEqual([1, expect.stringMatching(/no call t9\.0 .* waits for approval/)]);
      const approved = await starryAsync(
        ['approve', agent, 't1.0', '--args', '{"path":"c.md","content":"three"}', '--by', 'jest'],
        queue,
      );
      expect(approved).toMatchObject({
        code: 0,
        stdout: `approved t1.0 of agent ${agent} with edited arguments: it runs now\n`,
      });
      const again = await starryAsync(['deny', agent, 't1.0', '--reason', 'late'], queue);
      expect([again.code, again.stderr]).toEqual([2, expect.stringMatching(/decided already: approved by jest/)]);

      await run.until('stdout', /⏸ t2\.0 fs\.write/);
      const denied = await starryAsync(
        ['deny', agent, 't2.0', '--reason', 'one file is enough', '--by', 'jest'],
        queue,
      );
      expect(denied).toMatchObject({ code: 0, stdout: `denied t2.0 of agent ${agent}: the model reads why\n` });
      expect(await run.exited).toBe(0);
      const out = run.out().stdout;
      expect(out).toContain('✓ t1.0 approved by jest with edited arguments {"path":"c.md","content":"three"}');
      // A denied call never ran: no tool result, the model's pain says why.
      expect(out).toContain('Message: E_DENIED: jest denied this fs.write call: one file is enough');
      expect(out).toContain('✗ t2.0 denied by jest: one file is enough');
    } finally {
      run.child.kill('SIGINT');
    }
  });

  it("acts within the tenant `--tenant` (or STARRY_TENANT) names: its agent ids, its list, none of another tenant's tasks", async () => {
    const tenant = uniqueId('acme');
    // A name of this test's own: other tests' plain agents (the README's a1) share the server.
    const a1 = uniqueId('a1');
    // A tenant's workspace and script lie in its part of the roots (<root>/<tenant>).
    const own = tenantDir(tenant);
    const config = writeConfig({
      llm: `scripted:${writeScript([{ text: 'Done.' }], own)}`,
      workspace: [makeWorkspace({}, own)],
    });
    const run = await starryAsync(
      ['run', 'hello', '--tenant', tenant, '--agent', a1, '--config', config, '--json'],
      queue,
    );
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      agentId: a1,
      workflowId: `agent-${tenant}:${a1}-task-1`,
      outcome: 'COMPLETED',
    });

    // The same agent: by the tenant's own id, from the environment; by its full id, without a tenant.
    const status = await starryAsync(['status', a1, '--json'], queue, { STARRY_TENANT: tenant });
    expect(JSON.parse(status.stdout)).toMatchObject({ agentId: a1, tasks: [{ agentId: a1 }] });
    expect(JSON.parse((await starryAsync(['status', `${tenant}:${a1}`, '--json'], queue)).stdout)).toMatchObject({
      agentId: `${tenant}:${a1}`,
    });
    expect(await starryAsync(['status', a1], queue)).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(new RegExp(`unknown agent "${a1}"`)),
    });

    await eventually(
      'listed in its tenant',
      async () => {
        const listed = JSON.parse((await starryAsync(['list', '--tenant', tenant, '--json'], queue)).stdout).agents;
        return listed.length ? listed : undefined;
      },
      30_000,
      200,
    ).then((agents) =>
      expect(agents).toEqual([expect.objectContaining({ agentId: a1, workflowId: `agent-${tenant}:${a1}` })]),
    );

    const other = await starryAsync(['logs', `agent-${tenant}:${a1}-task-1`, '--tenant', uniqueId('globex')], queue);
    expect(other).toMatchObject({ code: 1, stderr: expect.stringMatching(/no task workflow agent-.*:a1-.*-task-1/) });
    const bad = await starryAsync(['status', a1, '--tenant', 'acme:x'], queue);
    expect(bad).toMatchObject({
      code: 64,
      stderr: expect.stringMatching(/invalid --tenant \(or STARRY_TENANT\): tenant may hold only letters/),
    });
  });

  it('follows an agent live with `watch`, task after task, and prints a finished task with `logs`', async () => {
    const agent = uniqueId('cli-watch');
    const config = {
      llm: `scripted:${writeScript([{ toolCalls: [{ name: 'fs.list', args: {} }] }, { text: 'Listed.' }])}`,
      workspace: [makeWorkspace()],
    };
    const first = await starryAsync(['submit', 'first', '--agent', agent, '--config', writeConfig(config)], queue);
    expect(first.code).toBe(0);
    await harness().agents.waitForTask(agent, 'task-1');
    const watch = starryLive(['watch', agent], queue);
    await watch.until('stdout', new RegExp(`agent ${agent}: WAITING_FOR_EVENT`));
    expect(
      (await starryAsync(['submit', 'second', '--agent', agent, '--config', writeConfig(config)], queue)).code,
    ).toBe(0);
    await watch.until('stdout', /◀ outcome COMPLETED/);
    watch.child.kill('SIGINT');
    await watch.exited;
    const { stdout } = watch.out();
    expect(stdout).toMatch(
      /▶ task-2 \(agent-.*-task-2\)\n[\s\S]*→ fs\.list \{\}\n {2}← fs\.list ok\n[\s\S]*│ Listed\.[\s\S]*◀ outcome COMPLETED/,
    );

    const logs = await starryAsync(['logs', taskWorkflowId(agent, 'task-1')], queue);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toMatch(
      /^tick 1 · \d+ tokens\n {2}→ fs\.list \{\}\n {2}← fs\.list ok\ntick 2 [\s\S]*│ Listed\.\noutcome COMPLETED/,
    );
    expect(await starryAsync(['logs', taskWorkflowId(agent, 'task-9')], queue)).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/no task workflow agent-.*-task-9/),
    });

    // The whole transcript, from the store: system prompt, goal, the model's call, the tool's result, the answer.
    const transcript = await starryAsync(['logs', taskWorkflowId(agent, 'task-1'), '--transcript'], queue);
    expect(transcript.code).toBe(0);
    expect(transcript.stdout).toMatch(
      /^\[system\]\nYou are an OpenStarry agent[\s\S]*\n\[user\]\nfirst\n\n\[assistant\]\n {2}→ fs\.list \{\}\n\n\[tool fs\.list\]\n\{"path":[\s\S]*\[assistant\]\nListed\.\n/,
    );
  });
});

describe('with no worker polling', () => {
  const queue = uniqueId('cli-none');

  it('starts no worker for status, halt, unlock, message or submit, and says what to do; status, --json too, answers from the visibility store', () => {
    const agent = uniqueId('cli-idle');
    const run = starry(
      [
        'run',
        'x',
        '--agent',
        agent,
        '--llm',
        `scripted:${writeScript([{ text: 'ok' }])}`,
        '--workspace',
        makeWorkspace(),
      ],
      queue,
    );
    expect(run.code).toBe(0);

    const status = starry(['status', agent], queue);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(
      new RegExp(`agent ${agent}: WAITING_FOR_EVENT · \\d+ tokens — from the visibility store`),
    );
    expect(status.stderr).toMatch(/no worker is polling task queue .* start one with `starry dev`/);
    // --json falls back the same way, and says where its answer comes from.
    const json = starry(['status', agent, '--json'], queue);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      agentId: agent,
      workflowId: `agent-${agent}`,
      agentState: 'WAITING_FOR_EVENT',
      tokensUsed: expect.any(Number),
      source: 'visibility store',
    });
    expect(json.stderr).toMatch(/no worker is polling task queue .* start one with `starry dev`/);
    for (const args of [
      ['unlock', agent],
      ['message', agent, 'hi'],
      [
        'submit',
        'y',
        '--agent',
        agent,
        '--llm',
        `scripted:${writeScript([{ text: 'ok' }])}`,
        '--workspace',
        makeWorkspace(),
      ],
    ]) {
      const r = starry(args, queue);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/no worker is polling task queue .*`starry run` starts one itself/);
    }
    const halt = starry(['halt', agent], queue);
    expect(halt.code).toBe(0);
    expect(halt.stdout).toMatch(/SYSTEM_HALT recorded for agent .*: no worker is polling/);
  });
});

function writeConfig(config: object): string {
  const file = path.join(makeWorkspace(), 'agent.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

describe('bad input', () => {
  const ws = makeWorkspace();
  const script = writeScript([{ text: 'ok' }]);

  it.each([
    [['run'], /a goal is required/],
    [['run', 'x', '--workspace', ws], /no LLM given/],
    [['run', 'x', '--llm', 'gpt:4', '--workspace', ws], /unknown provider "gpt"/],
    [
      ['run', 'x', '--llm', `scripted:${script}`, '--workspace', ws, '--guide', 'Zen'],
      /guide: must be a guide id \(a lowercase letter/,
    ],
    [
      ['run', 'x', '--llm', `scripted:${script}`, '--workspace', '/no/such/dir'],
      /workspace root \/no\/such\/dir does not exist/,
    ],
    [
      ['run', 'x', '--llm', 'scripted:/no/such/turns.json', '--workspace', ws],
      /scripted controller file .* does not exist/,
    ],
    [
      ['run', 'x', '--llm', 'local:/no/such/model.gguf', '--workspace', ws],
      /local model \/no\/such\/model.gguf does not exist. .*`npm run setup`/,
    ],
    [['unlock', 'a', '--add-tokens', '-5'], /--add-tokens must be a whole number/],
    [
      ['run', 'x', '--llm', 'scripted:/etc/passwd', '--workspace', ws],
      /scripted controller file \/etc\/passwd is not valid JSON \(Unexpected token\)/,
    ],
    [
      ['run', 'x', '--llm', `scripted:${writeScript([{ txet: 'typo' }])}`, '--workspace', ws],
      /scripted controller file .* is invalid:\n.*Unrecognized key: "txet"/,
    ],
    [['frobnicate'], /unknown command/],
  ])('starry %j exits 64 and says what is wrong', (args, message) => {
    const r = starry(args as string[]);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(message);
  });

  it.each(['0', '10', '-1', '1.5', 'abc'])('refuses --priority %s with 64 and starts no agent', (priority) => {
    const agent = uniqueId('cli-prio');
    const r = starry([
      'run',
      'x',
      '--agent',
      agent,
      '--llm',
      `scripted:${script}`,
      '--workspace',
      ws,
      '--priority',
      priority,
    ]);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/--priority.*must be a whole number from 1 \(first\) to 9/);
    expect(starry(['status', agent]).stderr).toMatch(/unknown agent/);
  });

  it('never prints the content of a file given as a script', () => {
    const r = starry(['run', 'x', '--llm', 'scripted:/etc/passwd', '--workspace', ws]);
    expect(r.stderr).not.toMatch(/root:/);
  });

  it('names the invalid field of a config file and exits 64', () => {
    const file = path.join(ws, 'bad.json');
    writeFileSync(file, JSON.stringify({ llm: `scripted:${script}`, safety: { maxTicks: -1, bogus: 1 } }));
    const r = starry(['run', 'x', '--config', file]);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/safety\.maxTicks: must be > 0/);
    expect(r.stderr).toMatch(/bogus/);
  });

  it('says an agent is unknown and exits 1', () => {
    const r = starry(['status', uniqueId('nobody')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/unknown agent ".*": no workflow agent-/);
  });
});

describe('starry replay', () => {
  it('replays a finished task from the server against the current code', () => {
    const agent = uniqueId('cli-replay');
    const run = starry([
      'run',
      'x',
      '--agent',
      agent,
      '--config',
      path.join(projectRoot(), 'examples/eperm/agent.json'),
      '--json',
    ]);
    expect(run.code).toBe(0);
    const r = starry(['replay', taskWorkflowId(agent, 'task-1')]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/replay ok: agent-.*-task-1 \(taskWorkflow, \d+ events\) is deterministic/);
    expect(r.code).toBe(0);
  });

  it('says a workflow the server does not have is not there, which server it asked and what to give instead, and exits 1', () => {
    const r = starry(['replay', 'agent-nobody-task-1']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `starry: no workflow agent-nobody-task-1 on ${address()} (namespace default) to replay: give the id of one on this server (\`starry list\` names the agents' workflows, agent-<id>; \`starry status <agent>\` its tasks, agent-<id>-task-<n>), or a history file with --file HISTORY.json\n`,
    );
  });

  it('names the first non-deterministic event of a history file, exits 1, and prints no raw log line of the replayer', () => {
    const file = path.join(projectRoot(), 'test/fixtures/histories/eperm-task.json');
    const tampered = path.join(mkdtempSync(path.join(os.tmpdir(), 'starry-replay-')), 'tampered.json');
    writeFileSync(tampered, readFileSync(file, 'utf8').replace(/"name": "tool"/, '"name": "toolRenamed"'));
    const r = starry(['replay', '--file', tampered]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^replay FAILED: tampered\nfirst non-deterministic event: #\d+ ACTIVITY_TASK_SCHEDULED\n/);
    expect(r.stdout).toMatch(/[Nn]ondeterminism/);
    expect(r.stderr).not.toContain('\u001b[');
    expect(r.stderr).not.toMatch(/WARN|temporalio_sdk_core/);
  });
});

describe('starry watch when its server stops answering', () => {
  it('says it lost the server, watches on when it answers again, and after --reconnect-for gives up with what to do and exit 1', async () => {
    // A server of this test's own (SQLite, so it comes back with the agent), and a worker process on it.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'starry-watch-'));
    const [port, uiPort] = [await freePort(), await freePort()];
    const start = () =>
      startDevServer({ port, uiPort, dbFile: path.join(dir, 'dev.db'), logFile: path.join(dir, 'server.log') });
    let server = await start();
    const queue = uniqueId('cli-lost-q');
    const env = { TEMPORAL_ADDRESS: server.address };
    const worker = await startWorkerProcess(queue, server.address);
    try {
      const agent = uniqueId('cli-lost');
      // The second call is still in flight while the server is away.
      const config = writeConfig({
        llm: `scripted:${writeScript([{ toolCalls: [{ name: 'fs.list', args: {} }] }, { delayMs: 20_000, text: 'Listed.' }])}`,
        workspace: [makeWorkspace()],
      });
      expect(
        (await starryAsync(['submit', 'list slowly', '--agent', agent, '--config', config], queue, env)).code,
      ).toBe(0);
      const watch = starryLive(['watch', agent], queue, env);
      await watch.until('stdout', /← fs\.list ok\n/);
      await server.stop();
      await watch.until(
        'stderr',
        new RegExp(
          `^starry: lost the Temporal server at ${server.address}: it does not answer; trying to reach it again for 60 s \\(Ctrl-C stops\\)\n`,
        ),
      );
      server = await start();
      await watch.until(
        'stderr',
        new RegExp(`\nstarry: the Temporal server at ${server.address} answers again; watching on\n$`),
      );
      await watch.until('stdout', /│ Listed\.\n[\s\S]*◀ outcome COMPLETED/);
      watch.child.kill('SIGINT');
      expect(await watch.exited).toBe(0);

      const giveUp = starryLive(['watch', agent, '--reconnect-for', '2'], queue, env);
      await giveUp.until('stdout', new RegExp(`agent ${agent}: WAITING_FOR_EVENT`));
      await server.stop();
      expect(await giveUp.exited).toBe(1);
      expect(giveUp.out().stderr).toBe(
        `starry: lost the Temporal server at ${server.address}: it does not answer; trying to reach it again for 2 s (Ctrl-C stops)\n` +
          `starry: the Temporal server at ${server.address} has not answered for 2 s, so this stopped watching agent ${agent}: start it again (\`starry dev\`, or \`starry server start\` for the local one) and run \`starry watch ${agent}\` again\n`,
      );
    } finally {
      await killWorker(worker);
      await server.stop();
    }
  }, 240_000);
});

/** `starry` from a folder of its own: its SQLite file, pid files and logs in a fresh state directory. */
const stateDir = () => privateDir('starry-state');
const inFolder = (dir: string) => ({ STARRY_STATE_DIR: dir });

describe("the local dev server, one per folder's SQLite file", () => {
  const pidOf = (dir: string, port: number) => Number(readFileSync(path.join(dir, `server-${port}.pid`), 'utf8'));

  it('refuses a second server on the file, naming the running one, while `starry dev` runs; Ctrl-C stops it and frees the file', async () => {
    const dir = stateDir();
    const a = await freePort();
    let b = 0; // chosen once a runs: its internal services take free ports of their own
    const queue = uniqueId('cli-dev-q');
    const dev = starryLive(['dev', '--port', String(a), '--api-port', '0'], queue, inFolder(dir));
    try {
      await dev.until(
        'stderr',
        new RegExp(
          `^started Temporal dev server at 127\\.0\\.0\\.1:${a}\\nWeb UI: http://127\\.0\\.0\\.1:${a + 1000}\\nworkspaces: under [^\\n]+\\nworker running on task queue ${queue}; Ctrl-C stops all\\n`,
        ),
      );
      b = await freePort();
      const refusal = new RegExp(
        `^starry: the SQLite file ${dir}/dev\\.db is in use by the Temporal dev server at 127\\.0\\.0\\.1:${a} \\(pid ${pidOf(dir, a)}, Web UI http://127\\.0\\.0\\.1:${a + 1000}\\), and two servers must not share one file: use that one \\(--port ${a}, or TEMPORAL_ADDRESS=127\\.0\\.0\\.1:${a}\\), stop it first .*, or give this one a file of its own \\(\`starry dev --db FILE\`\\)\\n$`,
      );
      for (const args of [
        ['server', 'start', '--port', String(b)],
        ['dev', '--port', String(b), '--api-port', '0'],
      ]) {
        const second = await starryAsync(args, queue, inFolder(dir));
        expect([args, second.code, second.stderr]).toEqual([args, 1, expect.stringMatching(refusal)]);
      }
      dev.child.kill('SIGINT');
      expect(await dev.exited).toBe(0);
      expect(dev.out().stderr).toContain(`stopped (agents are kept in ${dir}/dev.db)\n`);
      const after = await starryAsync(['server', 'start', '--port', String(b)], queue, inFolder(dir));
      expect(after).toMatchObject({
        code: 0,
        stdout: `started: 127.0.0.1:${b} · Web UI http://127.0.0.1:${b + 1000}\n`,
      });
      expect(await starryAsync(['server', 'stop', '--port', String(b)], queue, inFolder(dir))).toMatchObject({
        code: 0,
        stdout: `stopped the dev server on port ${b}\n`,
      });
    } finally {
      dev.child.kill('SIGINT');
      await dev.exited;
      if (b) await starryAsync(['server', 'stop', '--port', String(b)], queue, inFolder(dir));
    }
  });

  it('says at once that a port held by a gRPC program other than Temporal is not a server to use', async () => {
    // An HTTP/2 listener that answers every call as a gRPC server without Temporal's services does.
    const other = http2.createServer();
    other.on('stream', (stream) =>
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'unknown service' },
        { endStream: true },
      ),
    );
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const port = (other.address() as { port: number }).port;
    try {
      const r = await starryAsync(['server', 'start', '--port', String(port)], QUEUE, inFolder(stateDir()));
      expect(r).toMatchObject({
        code: 1,
        stderr: `starry: port ${port} is in use by a program that is not a Temporal server (it answered: 12 UNIMPLEMENTED: unknown service): choose a free port (--port N)\n`,
      });
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it('leaves no lock behind a server killed with SIGKILL: the next one starts on the file', async () => {
    const dir = stateDir();
    const a = await freePort();
    let b = 0; // chosen once a runs: its internal services take free ports of their own
    try {
      expect(await starryAsync(['server', 'start', '--port', String(a)], QUEUE, inFolder(dir))).toMatchObject({
        code: 0,
      });
      b = await freePort();
      expect(await starryAsync(['server', 'start', '--port', String(b)], QUEUE, inFolder(dir))).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/is in use by the Temporal dev server/),
      });
      process.kill(pidOf(dir, a), 'SIGKILL');
      // Its sockets close with its other files, the lock's among them.
      await eventually('the killed server gone', async () => ((await isListening(a)) ? undefined : true));
      expect(await starryAsync(['server', 'start', '--port', String(b)], QUEUE, inFolder(dir))).toMatchObject({
        code: 0,
        stdout: expect.stringMatching(/^started: /),
      });
    } finally {
      for (const port of [a, b].filter(Boolean))
        await starryAsync(['server', 'stop', '--port', String(port)], QUEUE, inFolder(dir));
    }
  });
});

describe('starry dev --otel', () => {
  it("serves a trace viewer beside its worker, which traces to it, and names each finished task's trace page", async () => {
    const port = await freePort();
    const metrics = await freePort();
    const queue = uniqueId('cli-otel-q');
    const dev = starryLive(['dev', '--otel', '--otel-port', '0', '--port', String(port), '--api-port', '0'], queue, {
      ...inFolder(stateDir()),
      OTEL_EXPORTER_PROMETHEUS_PORT: String(metrics),
      // A shell set up for a gRPC collector: the viewer speaks OTLP/HTTP, so --otel's traces must too.
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    try {
      await dev.until(
        'stderr',
        new RegExp(
          `^started Temporal dev server at 127\\.0\\.0\\.1:${port}\\nWeb UI: \\S+\\ntraces: (http://127\\.0\\.0\\.1:\\d+) \\(a task's trace: \\1/traces/<traceId>\\)\\nmetrics: http://127\\.0\\.0\\.1:${metrics}/metrics\\nworkspaces: under [^\\n]+\\nworker running on task queue ${queue}; Ctrl-C stops all\\n`,
        ),
      );
      const viewer = /traces: (\S+)/.exec(dev.out().stderr)![1]!;
      const agent = uniqueId('cli-otel');
      const config = path.join(projectRoot(), 'examples/eperm/agent.json');
      const run = await starryAsync(
        ['run', 'Tell me what /root/secret.txt says.', '--agent', agent, '--config', config],
        queue,
        // The dev's worker (traced) runs it: `run` starts none of its own where one polls.
        { TEMPORAL_ADDRESS: `127.0.0.1:${port}`, STARRY_RUN_WORKER: 'auto' },
      );
      expect(run.code).toBe(0);
      const line = new RegExp(`trace of agent-${agent}-task-1 \\(COMPLETED\\): (${viewer}/traces/[0-9a-f]{32})\\n`);
      await dev.until('stderr', line);
      const page = await fetch(line.exec(dev.out().stderr)![1]!);
      expect(page.status).toBe(200);
      const html = await page.text();
      for (const shown of ['invoke_agent', 'chat turns.json', 'execute_tool fs.read', '◆ starry.pain EPERM'])
        expect(html).toContain(shown);
      dev.child.kill('SIGINT');
      expect(await dev.exited).toBe(0);
    } finally {
      dev.child.kill('SIGINT');
      await dev.exited;
    }
  });
});

describe('starry demo', () => {
  it('refuses a server that listens on its port already and was not started from this folder, naming it', async () => {
    const port = Number(address().split(':').pop());
    const queue = uniqueId('cli-demo-q');
    const r = await starryAsync(['demo', '--port', String(port)], queue, {
      STARRY_STATE_DIR: privateDir('starry-state'),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `starry: ${address()} is held by a Temporal server this folder did not start (another checkout's, or a plain \`temporal server start-dev\`)`,
    );
    expect(r.stderr).toMatch(/Start this folder's own on a free port \(`npm run demo -- --port \d+`, Web UI on \d+\)/);
    // Nothing ran there: no agent of the demo's on that server.
    expect(r.stdout).toBe('');
    expect(r.stderr).not.toMatch(/submitted/);
  });

  it("starts this folder's own dev server on --port, with its Web UI on the port + 1000, and says how to stop it", async () => {
    const dir = privateDir('starry-state');
    const port = await freePort();
    try {
      const r = await starryAsync(['demo', '--port', String(port)], uniqueId('cli-demo-q'), { STARRY_STATE_DIR: dir });
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(
        new RegExp(
          `^starting a Temporal dev server on 127\\.0\\.0\\.1:${port} \\(SQLite in ${path.relative(process.cwd(), dir)}/, kept running for the Web UI on port ${port + 1000}\\)…\\n`,
        ),
      );
      expect(r.stdout).toMatch(/^outcome COMPLETED · agent WAITING_FOR_EVENT$/m);
      expect(r.stdout).toContain(
        `Agent workflow: http://127.0.0.1:${port + 1000}/namespaces/default/workflows/agent-demo-`,
      );
      expect(r.stdout).toContain(
        `The dev server keeps running for the Web UI; \`npm run stop -- --port ${port}\` stops it.\n`,
      );
      expect(
        await starryAsync(['server', 'start', '--port', String(port)], QUEUE, { STARRY_STATE_DIR: dir }),
      ).toMatchObject({
        code: 0,
        stdout: `already running: 127.0.0.1:${port} · Web UI http://127.0.0.1:${port + 1000}\n`,
      });
    } finally {
      await starryAsync(['server', 'stop', '--port', String(port)], QUEUE, { STARRY_STATE_DIR: dir });
    }
  });
});
