/**
 * The commands that need an agent's workflow to answer, with a worker polling (as under `starry dev`):
 * locks and unlocks, limits, approvals, tenants, watch and logs; and with none polling, what each says.
 * Exit codes: 0 completed, 1 failed, 2 locked/stopped/refused, 64 usage (README).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { makeWorkspace, tenantDir, uniqueId, writeScript } from '../helpers/harness';
import { eventually } from '../../dev/poll';
import { taskWorkflowId } from '../../workflows/messages';
import { isActivityRunning } from '../helpers/workflow-history';
import {
  EVIL,
  EVIL_SHOWN,
  RAW_CONTROL,
  starry,
  starryAsync,
  starryLive,
  withWorkerOn,
  writeConfig,
} from '../helpers/cli';

jest.setTimeout(180_000);

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
