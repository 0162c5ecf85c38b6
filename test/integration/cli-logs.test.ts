/**
 * `starry replay` of a task from the server or a file, and `starry watch` when its server stops answering.
 * Exit codes: 0 completed, 1 failed, 2 locked/stopped/refused, 64 usage (README).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import { address, makeWorkspace, uniqueId, writeScript } from '../helpers/harness';
import { taskWorkflowId } from '../../workflows/messages';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';
import { freePort, startDevServer } from '../../dev/dev-server';
import { starry, starryAsync, starryLive, writeConfig } from '../helpers/cli';

jest.setTimeout(180_000);

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

  it('takes one source of histories: none, or two, is a usage error naming the three; so is a bundle that is not there', () => {
    const usage = 'starry: give one of WORKFLOW_ID, --file HISTORY.json or --recent N\n';
    expect(starry(['replay'])).toMatchObject({ code: 64, stderr: usage });
    expect(starry(['replay', 'agent-a-task-1', '--recent', '5'])).toMatchObject({ code: 64, stderr: usage });
    expect(starry(['replay', '--recent', 'many'])).toMatchObject({
      code: 64,
      stderr: 'starry: --recent must be a whole number from 1 to 1000 (histories of each workflow type); got "many"\n',
    });
    expect(starry(['replay', '--recent', '5', '--bundle', '/nonexistent/workflow-bundle.js'])).toMatchObject({
      code: 64,
      stderr: expect.stringContaining('--bundle /nonexistent/workflow-bundle.js: no such file.'),
    });
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
