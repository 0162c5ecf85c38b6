/**
 * The edges a newcomer met: `starry --version`, a required flag that says so in its help, `starry logs`
 * given an agent's id, and what `unlock --resume` and `resubmit` say after a halt left nothing to resume.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import { taskWorkflowId } from '../../workflows/messages';
import type { VersionedWorker } from '../../workers/worker';
import { makeWorkspace, scriptedConfig, uniqueId, writeScript } from '../helpers/harness';
import { starryAsync, withWorkerOn } from '../helpers/cli';
import { done } from '../helpers/scenarios';
import { activityRunning } from '../helpers/workflow-history';

jest.setTimeout(120_000);

const queue = uniqueId('cli-newcomer');
const h = withWorkerOn(queue);

it('--version prints the package version and the build id its worker runs as', async () => {
  const { version } = JSON.parse(readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as { version: string };
  const r = await starryAsync(['--version'], queue);
  expect(r).toMatchObject({
    code: 0,
    stdout: `starry ${version} (build ${(h().worker as VersionedWorker).version.buildId})\n`,
  });
});

it('deny --help marks --reason as required', async () => {
  const r = await starryAsync(['deny', '--help'], queue);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/--reason <text> +why; the model reads it \(required\)\n/);
});

describe('after a halt of a running task', () => {
  const agentId = uniqueId('newcomer');
  beforeAll(async () => {
    const config = scriptedConfig(writeScript([{ delayMs: 30_000, text: 'slow' }, done()]), makeWorkspace());
    await h().agents.submit(agentId, { goal: 'slow', config });
    await activityRunning(h().agents.client, taskWorkflowId(agentId, 'task-1'), 'llm');
    expect((await starryAsync(['halt', agentId, '--by', 'jest'], queue)).code).toBe(0);
    expect(await h().agents.waitForTask(agentId, 'task-1')).toMatchObject({ outcome: 'CANCELLED' });
  });

  it("`starry logs AGENT` lists the agent's tasks: id, status, started, workflow id", async () => {
    const r = await starryAsync(['logs', agentId], queue);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(
      new RegExp(
        `^${agentId} is an agent; its tasks \\(\`starry logs WORKFLOW_ID\` prints one's log\\):\\n` +
          `TASK +STATUS +STARTED +WORKFLOW_ID\\n` +
          `task-1 +CANCELLED +\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z +${taskWorkflowId(agentId, 'task-1')}\\n$`,
      ),
    );
    expect(r.code).toBe(0);
  });

  it('`starry logs` of neither a task nor an agent keeps the task message', async () => {
    const r = await starryAsync(['logs', uniqueId('nobody')], queue);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^starry: no task workflow .*: task workflow ids look like agent-<agentId>-task-<n>/);
  });

  it('`resubmit` of the halted task says it ran and ended CANCELLED, and that nothing is there to resubmit', async () => {
    const r = await starryAsync(['resubmit', agentId, 'task-1'], queue);
    expect(r).toMatchObject({
      code: 1,
      stderr:
        `starry: agent ${agentId} has no cancelled task task-1: a halt cancelled none of its queued tasks, so there is nothing to resubmit; ` +
        'task-1 started and ended CANCELLED (resubmit queues again only tasks a halt cancelled before they started: submit its goal again to run it anew)\n',
    });
  });

  it('`unlock --resume` unlocks and says there was nothing to resume, and why', async () => {
    const r = await starryAsync(['unlock', agentId, '--resume', '--by', 'jest'], queue);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(
        `^agent ${agentId} unlocked from STOPPED.*; nothing to resume: no task was suspended \\(task-1 ended CANCELLED: ` +
          'a halt cancels the running task rather than suspending it; submit its goal again to run it anew\\); ' +
          'no queued task was cancelled, so there is nothing to resubmit either\\n$',
      ),
    );
  });
});
