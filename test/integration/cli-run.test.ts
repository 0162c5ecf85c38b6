/**
 * `starry run` as a user meets it: each tick live, the contract JSON, control characters escaped, its
 * exit codes; and bad input: a usage error (64) that starts nothing.
 * Exit codes: 0 completed, 1 failed, 2 locked/stopped/refused, 64 usage (README).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import { makeWorkspace, uniqueId, writeScript } from '../helpers/harness';
import { taskWorkflowId } from '../../workflows/messages';
import { EVIL, EVIL_SHOWN, RAW_CONTROL, starry, starryLive } from '../helpers/cli';

jest.setTimeout(180_000);

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
