/**
 * Worker Deployment Versioning (docs/ARCHITECTURE.md#versioning) on the real server: two versions of one
 * deployment on one task queue. A task stays on the version it started on; its agent moves to the new
 * current version at the continue-as-new after the task; an idle agent is woken to move; a version
 * nobody made current waits; a developer's next build takes over what an earlier one left behind.
 * Each test has a deployment of its own, so the run's other workers never see these versions.
 */
import type { Client } from '@temporalio/client';
import { decodeVersioningBehavior } from '@temporalio/common';
import { makeVersionCurrent } from '../../workers/versioning';
import { connectWorker } from '../../workers/connection';
import { agentWorkflowId } from '../../workflows/messages';
import { LlmGate } from '../helpers/gated-llm';
import {
  address,
  makeWorkspace,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { eventually } from '../../dev/poll';
import { expectWarnings } from '../helpers/expected-logs';

jest.setTimeout(180_000);

const NOT_CURRENT = /^worker version b is not the current version of deployment dep-/;
expectWarnings(NOT_CURRENT);

const DONE = { text: 'Done.', usage: { inputTokens: 10, outputTokens: 5 } };
const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0).reverse()) await h.stop();
});

/** A worker of `buildId` in `deploymentName` on `taskQueue`. */
async function version(
  deploymentName: string,
  buildId: string,
  taskQueue: string | undefined,
  makeCurrent: 'if-none' | 'always' | 'take-over',
  gate?: LlmGate,
): Promise<Harness> {
  const h = await startHarness({
    name: `v-${buildId}`,
    ...(taskQueue ? { taskQueue } : {}),
    versioning: { deploymentName, buildId, makeCurrent },
    ...(gate ? { interceptors: { activity: [gate.interceptor()] } } : {}),
  });
  harnesses.push(h);
  return h;
}

/** The version a workflow's latest run is on, and how it moves. */
async function versionOf(
  client: Client,
  workflowId: string,
): Promise<{ buildId?: string; behavior?: string; runId: string }> {
  const d = await client.workflow.getHandle(workflowId).describe();
  const v = d.raw.workflowExecutionInfo?.versioningInfo;
  return {
    buildId: v?.deploymentVersion?.buildId ?? undefined,
    behavior: decodeVersioningBehavior(v?.behavior),
    runId: d.runId,
  };
}

/** Wait until `buildId` is the deployment's current version. */
async function currentIs(client: Client, deploymentName: string, buildId: string): Promise<void> {
  await eventually(`${buildId} to be current`, async () => {
    const d = await client.workflowService
      .describeWorkerDeployment({ namespace: 'default', deploymentName })
      .catch(() => undefined);
    return d?.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId === buildId ? true : undefined;
  });
}

const ws = () => makeWorkspace({ 'notes.md': '# Notes\n' });

describe('Worker Deployment Versioning', () => {
  it('keeps a running task on the version it started on, and moves its agent to the new current version at the continue-as-new after it', async () => {
    const deployment = uniqueId('dep');
    const gate = new LlmGate();
    const a = await version(deployment, 'a', undefined, 'always', gate);
    await currentIs(a.agents.client, deployment, 'a');
    const agentId = uniqueId('moves');
    gate.hold(agentId);
    const config = scriptedConfig(writeScript([{ toolCalls: [{ name: 'fs.list', args: {} }] }, DONE, DONE]), ws());
    const first = await a.agents.submit(agentId, { goal: 'list, then answer', config });
    await gate.arrived(agentId);

    // Version b becomes current while the task's first LLM call waits on a.
    const b = await version(deployment, 'b', a.taskQueue, 'always', gate);
    await currentIs(b.agents.client, deployment, 'b');
    expect(await versionOf(b.agents.client, first.workflowId)).toMatchObject({ buildId: 'a', behavior: 'PINNED' });
    const agentRun = await versionOf(b.agents.client, agentWorkflowId(agentId));
    expect(agentRun).toMatchObject({ buildId: 'a', behavior: 'PINNED' });

    gate.release(agentId);
    expect(await b.agents.waitForTask(agentId, first.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    // The task finished where it started; the agent continued as new onto b.
    expect(await versionOf(b.agents.client, first.workflowId)).toMatchObject({ buildId: 'a' });
    const moved = await eventually('the agent on b', async () => {
      const v = await versionOf(b.agents.client, agentWorkflowId(agentId));
      return v.buildId === 'b' ? v : undefined;
    });
    expect(moved.runId).not.toBe(agentRun.runId);
    // Its state came along, and its next task runs on b.
    expect((await b.agents.status(agentId)).tasks.map((t) => t.taskId)).toEqual([first.taskId]);
    const second = await b.agents.submitExisting(agentId, { goal: 'answer' });
    expect(await b.agents.waitForTask(agentId, second.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    expect(await versionOf(b.agents.client, second.workflowId)).toMatchObject({ buildId: 'b', behavior: 'PINNED' });
  });

  it('wakes an idle agent of the old version when a new one becomes current, so it moves without a message', async () => {
    const deployment = uniqueId('dep');
    const a = await version(deployment, 'a', undefined, 'always');
    await currentIs(a.agents.client, deployment, 'a');
    const agentId = uniqueId('idle');
    const { taskId } = await a.agents.submit(agentId, {
      goal: 'answer',
      config: scriptedConfig(writeScript([DONE]), ws()),
    });
    await a.agents.waitForTask(agentId, taskId);
    expect(await versionOf(a.agents.client, agentWorkflowId(agentId))).toMatchObject({ buildId: 'a' });

    await version(deployment, 'b', a.taskQueue, 'always');
    await eventually(
      'the idle agent on b',
      async () => ((await versionOf(a.agents.client, agentWorkflowId(agentId))).buildId === 'b' ? true : undefined),
      60_000,
      250,
    );
    expect((await a.agents.status(agentId)).tasks.map((t) => t.taskId)).toEqual([taskId]);
  });

  it('leaves a new version that nobody made current without work, and says how to make it current', async () => {
    const deployment = uniqueId('dep');
    const a = await version(deployment, 'a', undefined, 'always');
    await currentIs(a.agents.client, deployment, 'a');
    await version(deployment, 'b', a.taskQueue, 'if-none');
    const connection = await connectWorker({ address: address(), namespace: 'default' });
    const said: string[] = [];
    try {
      const outcome = await makeVersionCurrent(
        connection,
        'default',
        { deploymentName: deployment, buildId: 'b' },
        'if-none',
        { info: (m) => said.push(m), warn: (m) => said.push(m) },
      );
      expect(outcome).toBe('waits');
    } finally {
      await connection.close();
    }
    expect(said.join('\n')).toMatch(
      new RegExp(
        `worker version b is not the current version of deployment ${deployment} \\(a is\\) and gets no new work until it is: \`starry worker --set-current\``,
      ),
    );
    // New work goes to a.
    const agentId = uniqueId('stays');
    const { workflowId, taskId } = await a.agents.submit(agentId, {
      goal: 'answer',
      config: scriptedConfig(writeScript([DONE]), ws()),
    });
    await a.agents.waitForTask(agentId, taskId);
    expect(await versionOf(a.agents.client, workflowId)).toMatchObject({ buildId: 'a' });
  });

  it('on a developer’s machine, gives the next build what an earlier build left behind when it stopped', async () => {
    const deployment = uniqueId('dep');
    const first = await version(deployment, 'dev-1', undefined, 'take-over');
    await currentIs(first.agents.client, deployment, 'dev-1');
    const agentId = uniqueId('dev');
    const config = scriptedConfig(writeScript([DONE, DONE]), ws());
    const one = await first.agents.submit(agentId, { goal: 'answer', config });
    await first.agents.waitForTask(agentId, one.taskId);
    const taskQueue = first.taskQueue;
    await harnesses.pop()?.stop();

    // The rebuilt worker: the idle agent, pinned to dev-1, takes its next task on dev-2.
    const second = await version(deployment, 'dev-2', taskQueue, 'take-over');
    await currentIs(second.agents.client, deployment, 'dev-2');
    const two = await second.agents.submitExisting(agentId, { goal: 'answer again' });
    expect(await second.agents.waitForTask(agentId, two.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    expect(await versionOf(second.agents.client, two.workflowId)).toMatchObject({ buildId: 'dev-2' });
  });
});
