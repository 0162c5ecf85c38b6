/**
 * The `starry` CLI as a user meets it (DESIGN.md §6): the compiled bin against the test server, with its
 * embedded worker. Exit codes: 0 completed, 1 failed, 2 locked/stopped/refused, 64 usage.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../workers/paths';
import { address, makeWorkspace, uniqueId, writeScript } from '../helpers/harness';

const bin = path.join(projectRoot(), 'bin', 'starry.js');

function starry(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], {
    env: { ...process.env, TEMPORAL_ADDRESS: address() },
    encoding: 'utf8',
    timeout: 90_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

describe('starry run', () => {
  it('prints the contract JSON for the EPERM scenario and exits 0', () => {
    const agent = uniqueId('cli');
    const r = starry(['run', 'Tell me what /root/secret.txt says.', '--agent', agent, '--config', path.join(projectRoot(), 'examples/eperm/agent.json'), '--json']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const result = JSON.parse(lines[0] as string);
    expect(Object.keys(result).sort()).toEqual(
      ['agentId', 'agentState', 'finalText', 'injections', 'outcome', 'taskId', 'ticks', 'tokensUsed', 'toolCalls', 'workflowId'].sort(),
    );
    expect(result).toMatchObject({ agentId: agent, taskId: 'task-1', workflowId: `agent-${agent}-task-1`, outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ticks: 4 });
    expect(result.toolCalls[0]).toMatchObject({ tick: 1, name: 'fs.read', status: 'failed', error: { code: 'EPERM', kind: 'execution', source: 'fs.read' } });
    expect(result.injections[0].kind).toBe('PAIN');
  });

  it('exits 2 with a SUSPENDED result when a breaker locks the agent, refuses the next task, and unlocks', () => {
    const agent = uniqueId('cli-lock');
    const script = writeScript([{ toolCalls: [{ name: 'fs.list', args: {} }] }, { toolCalls: [{ name: 'fs.list', args: {} }] }, { text: 'never reached' }]);
    const ws = makeWorkspace();
    const config = path.join(ws, '..', `${path.basename(ws)}-agent.json`);
    writeFileSync(config, JSON.stringify({ llm: `scripted:${script}`, workspace: [ws], safety: { maxTicks: 1 } }));

    const run = starry(['run', 'loop forever', '--agent', agent, '--config', config, '--json']);
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({ outcome: 'SUSPENDED', agentState: 'SAFETY_LOCKOUT', reason: { code: 'LOOP_CAP' }, ticks: 1 });

    const refused = starry(['run', 'another task', '--agent', agent, '--config', config, '--json']);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/task refused: agent .* is SAFETY_LOCKOUT \(LOOP_CAP: .*\).*starry unlock/);

    const status = starry(['status', agent, '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ agentState: 'SAFETY_LOCKOUT', suspendedTask: { taskId: 'task-1' } });

    const unlock = starry(['unlock', agent, '--note', 'checked the loop', '--by', 'jest']);
    expect(unlock.code).toBe(0);
    expect(unlock.stdout).toMatch(/unlocked from SAFETY_LOCKOUT \(LOOP_CAP\); task task-1 ended ABORTED/);

    const again = starry(['unlock', agent]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/is not locked \(WAITING_FOR_EVENT\): nothing to unlock/);
  });

  it('prints a 100 KB answer whole when stdout is a pipe', () => {
    const answer = 'a'.repeat(100_000);
    const r = starry(['run', 'answer at length', '--agent', uniqueId('cli-big'), '--llm', `scripted:${writeScript([{ text: answer }])}`, '--workspace', makeWorkspace(), '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).finalText).toBe(answer);
  });

  it('exits 1 when the task fails', () => {
    const script = writeScript([{ error: { status: 400, message: 'bad request from the model' } }]);
    const r = starry(['run', 'fail', '--agent', uniqueId('cli-fail'), '--llm', `scripted:${script}`, '--workspace', makeWorkspace(), '--json']);
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
    [['run', 'x', '--llm', `scripted:${script}`, '--workspace', ws, '--guide', 'zen'], /unknown guide "zen": use one of pain/],
    [['run', 'x', '--llm', `scripted:${script}`, '--workspace', '/no/such/dir'], /workspace root \/no\/such\/dir does not exist/],
    [['run', 'x', '--llm', 'scripted:/no/such/turns.json', '--workspace', ws], /scripted controller file .* does not exist/],
    [['run', 'x', '--llm', 'local:/no/such/model.gguf', '--workspace', ws], /local model \/no\/such\/model.gguf does not exist. .*`npm run setup`/],
    [['unlock', 'a', '--add-tokens', '-5'], /--add-tokens must be a whole number/],
    [['run', 'x', '--llm', 'scripted:/etc/passwd', '--workspace', ws], /scripted controller file \/etc\/passwd is not valid JSON \(Unexpected token\)/],
    [['run', 'x', '--llm', `scripted:${writeScript([{ txet: 'typo' }])}`, '--workspace', ws], /scripted controller file .* is invalid:\n.*Unrecognized key: "txet"/],
    [['frobnicate'], /unknown command/],
  ])('starry %j exits 64 and says what is wrong', (args, message) => {
    const r = starry(args as string[]);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(message);
  });

  it.each(['0', '10', '-1', '1.5', 'abc'])('refuses --priority %s with 64 and starts no agent', (priority) => {
    const agent = uniqueId('cli-prio');
    const r = starry(['run', 'x', '--agent', agent, '--llm', `scripted:${script}`, '--workspace', ws, '--priority', priority]);
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
    const run = starry(['run', 'x', '--agent', agent, '--config', path.join(projectRoot(), 'examples/eperm/agent.json'), '--json']);
    expect(run.code).toBe(0);
    const r = starry(['replay', `agent-${agent}-task-1`]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/replay ok: agent-.*-task-1 \(taskWorkflow, \d+ events\) is deterministic/);
    expect(r.code).toBe(0);
  });
});
