/**
 * No worker strands another's agents (docs/ARCHITECTURE.md#versioning). The defect this replays: a
 * `starry run` from a checkout whose workflow code differed, pointed at a server where other agents
 * lived, made its build current and moved every open workflow to itself; when it exited, the agents
 * there were left on a build nobody ran, and the next submit to one failed. Now a command changes the
 * routing only of this folder's own dev server: against any other, `starry run` runs no worker unless
 * asked (`--worker always`), and one it runs joins as a version of its own build and moves nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentClient } from '../../client/agent-client';
import { projectRoot } from '../../dev/paths';
import { agentWorkflowId } from '../../workflows/messages';
import {
  address,
  makeWorkspace,
  privateDir,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { done } from '../helpers/scenarios';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

jest.setTimeout(180_000);

let h: Harness;
let fleet: ChildProcess;
/** A deployment of this file's own: the run's other workers never see its versions. */
const deployment = uniqueId('dep-fleet');
const queue = uniqueId('tq-fleet');
let agents: AgentClient;

beforeAll(async () => {
  h = await startHarness({ name: 'take-over', withWorker: false });
  // The fleet: a worker of the run's build, whose version becomes its deployment's first current one.
  fleet = await startWorkerProcess(queue, address(), { env: { STARRY_DEPLOYMENT_NAME: deployment } });
  agents = new AgentClient({ connection: h.connection, taskQueue: queue });
});
afterAll(async () => {
  if (fleet) await killWorker(fleet);
  await h?.stop();
});

/** Another build: the same workflow code but for a comment, so another build id, as another checkout's. */
function otherBuild(): string {
  const file = path.join(privateDir('starry-build-b'), 'workflow-bundle.js');
  // First: the bundle ends with its source map's comment, which the SDK reads to the end of the file.
  writeFileSync(file, `// another checkout\n${readFileSync(process.env.STARRY_WORKFLOW_BUNDLE as string, 'utf8')}`);
  return file;
}

/** `starry <args>` against the run's server (which this folder did not start), on `taskQueue`. */
function starry(args: string[], env: NodeJS.ProcessEnv, taskQueue = queue) {
  const child = spawn(process.execPath, [path.join(projectRoot(), 'bin', 'starry.js'), ...args], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: address(),
      STARRY_TASK_QUEUE: taskQueue,
      STARRY_DEPLOYMENT_NAME: deployment,
      ...env,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<number>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : -1))),
  );
  return { child, exited, out: () => ({ stdout, stderr }) };
}

async function current(): Promise<string | undefined> {
  const d = await h.connection.workflowService.describeWorkerDeployment({
    namespace: 'default',
    deploymentName: deployment,
  });
  return d.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
}

async function buildOf(workflowId: string): Promise<string | undefined> {
  const d = await h.agents.client.workflow.getHandle(workflowId).describe();
  return d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId ?? undefined;
}

describe('a command against a server this folder did not start', () => {
  it('runs a worker only when asked, which changes no routing: the fleet keeps its build and its agents', async () => {
    const workspace = makeWorkspace();
    const agentId = uniqueId('fleet-agent');
    const first = await agents.submit(agentId, {
      goal: 'hi',
      config: scriptedConfig(writeScript([done()]), workspace),
    });
    await agents.waitForTask(agentId, first.taskId);
    const fleetBuild = await current();
    expect(fleetBuild).toBeDefined();
    expect(await buildOf(agentWorkflowId(agentId))).toBe(fleetBuild);

    // Another checkout's `starry run --worker always`, its own build, on the fleet's queue.
    const args = ['run', 'hello', '--agent', uniqueId('laptop'), '--llm', `scripted:${writeScript([done()])}`];
    const run = starry([...args, '--workspace', workspace, '--worker', 'always'], {
      STARRY_WORKFLOW_BUNDLE: otherBuild(),
    });
    expect([await run.exited, run.out().stderr]).toEqual([0, expect.any(String)]);
    expect(run.out().stderr).toMatch(
      new RegExp(`joins deployment ${deployment} as version 0\\.1\\.0-[0-9a-f]{12} and changes no routing`),
    );
    expect(run.out().stderr).not.toContain(`as version ${fleetBuild} `);

    // Nothing moved: the fleet's build is current, its agent is on it and takes the next task.
    expect(await current()).toBe(fleetBuild);
    expect(await buildOf(agentWorkflowId(agentId))).toBe(fleetBuild);
    const next = await agents.submit(agentId, {
      goal: 'again',
      config: scriptedConfig(writeScript([done()]), workspace),
    });
    expect(await agents.waitForTask(agentId, next.taskId)).toMatchObject({ outcome: 'COMPLETED' });
  });

  it('with no worker polling, `run` starts none and says what to do, starting no agent', async () => {
    const agentId = uniqueId('nobody');
    const idle = uniqueId('tq-idle');
    const args = ['run', 'hello', '--agent', agentId, '--llm', `scripted:${writeScript([done()])}`];
    const run = starry([...args, '--workspace', makeWorkspace()], {}, idle);
    expect(await run.exited).toBe(1);
    expect(run.out().stderr).toContain(
      `no worker is polling task queue ${idle} on ${address()}, a Temporal server this folder did not start`,
    );
    expect(run.out().stderr).toContain('pass `--worker always` to run one in this process');
    await expect(h.agents.client.workflow.getHandle(agentWorkflowId(agentId)).describe()).rejects.toThrow(/not found/i);
  });

  it('a `starry run` ends on SIGTERM as on Ctrl-C: detached, saying how to follow the task', async () => {
    const agentId = uniqueId('sigterm');
    const slow = writeScript([{ ...done('slow'), delayMs: 30_000 }]);
    const run = starry(
      ['run', 'slow', '--agent', agentId, '--llm', `scripted:${slow}`, '--workspace', makeWorkspace()],
      {},
    );
    for (let i = 0; i < 300 && !run.out().stderr.includes('submitted task-1'); i++)
      await new Promise((r) => setTimeout(r, 100));
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(143);
    expect(run.out().stderr).toContain(`detached from task-1 of agent ${agentId}; the task goes on`);
    await agents.halt(agentId);
  });
});
