/**
 * A submit from the edge to the agent. Its config, parsed at the edge, goes once: in the submit, not in
 * the agent's start arguments too. With no worker to take it, a submit fails within seconds (none polls)
 * or after the client's wait (the one that polled is gone), starts no agent, and is refused if a worker
 * takes it later: nothing of it runs unseen. Sent again with its idempotency key or task id, a submit
 * is answered as the first was and runs once, across a submit no worker took.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { AgentClient, NoWorkerError } from '../../client/agent-client';
import { hasLiveWorkerOn } from '../../client/connection';
import { until } from '../../dev/poll';
import type { AgentWorkflowInput } from '../../workflows/agent';
import { agentWorkflowId } from '../../workflows/messages';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { firstPayload } from '../helpers/workflow-history';

jest.setTimeout(120_000);

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'submit' });
});
afterAll(async () => {
  await h?.stop();
});

const DONE = { text: 'Done.', usage: { inputTokens: 10, outputTokens: 5 } };
const config = () => scriptedConfig(writeScript([DONE]), makeWorkspace());
/** A client of `taskQueue` that waits 2 s for a worker to take a submit. */
const clientOf = (taskQueue: string) =>
  new AgentClient({ connection: h.connection, taskQueue, acceptTimeoutMs: 2_000 });
const failureOf = (p: Promise<unknown>) =>
  p.then(
    () => new Error('no failure'),
    (e: unknown) => e as Error,
  );

async function exists(agentId: string): Promise<boolean> {
  try {
    await h.agents.client.workflow.getHandle(agentWorkflowId(agentId)).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** A worker that polled its task queue and stopped: the server still lists it as polling for a minute. */
async function stoppedWorker(): Promise<Harness> {
  const w = await startHarness({ name: 'gone' });
  await until('the worker to poll', () => hasLiveWorkerOn(h.connection, 'default', w.taskQueue));
  await w.stop();
  return w;
}

describe('the config of a submit', () => {
  it("goes once, in the submit: the agent's start arguments do not carry it", async () => {
    const agentId = uniqueId('once');
    const cfg = config();
    const { taskId } = await h.agents.submit(agentId, { goal: 'say done', config: cfg });
    expect((await h.agents.waitForTask(agentId, taskId)).outcome).toBe('COMPLETED');
    const { events } = await h.agents.client.workflow.getHandle(agentWorkflowId(agentId)).fetchHistory();
    expect(firstPayload<AgentWorkflowInput>(events?.[0]?.workflowExecutionStartedEventAttributes?.input)).toEqual({
      agentId,
    });
    const accepted = events?.find(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes,
    )?.workflowExecutionUpdateAcceptedEventAttributes;
    expect(firstPayload(accepted?.acceptedRequest?.input?.args)).toMatchObject({
      goal: 'say done',
      config: { llm: cfg.llm, workspace: cfg.workspace },
    });
  });
});

describe('a submit no worker takes', () => {
  it('fails within seconds when no worker polls the task queue, naming it, and starts no agent', async () => {
    const taskQueue = uniqueId('tq-nobody');
    const agentId = uniqueId('nobody');
    const started = Date.now();
    const err = await failureOf(clientOf(taskQueue).submit(agentId, { goal: 'anyone?', config: config() }));
    expect(err).toBeInstanceOf(NoWorkerError);
    expect(err.message).toMatch(
      new RegExp(`^no worker polls task queue ${taskQueue} \\(namespace default\\): nothing was submitted`),
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await exists(agentId)).toBe(false);
  });

  it('fails after the wait when the worker that polled is gone, removes the agent it started, and nothing runs when a worker comes', async () => {
    const gone = await stoppedWorker();
    const agentId = uniqueId('untaken');
    const err = await failureOf(clientOf(gone.taskQueue).submit(agentId, { goal: 'abandoned', config: config() }));
    expect(err).toBeInstanceOf(NoWorkerError);
    expect(err.message).toMatch(
      /^no worker took the submit within 2 s, though one polled task queue .*: nothing was submitted/,
    );
    await until('the untaken agent to be removed', async () => !(await exists(agentId)));

    const late = await startHarness({ name: 'late', taskQueue: gone.taskQueue });
    try {
      // The worker is at work (it ran another agent's task), and the abandoned agent is still not there.
      const other = uniqueId('other');
      await late.agents.waitForTask(other, (await late.agents.submit(other, { goal: 'run', config: config() })).taskId);
      expect(await exists(agentId)).toBe(false);
    } finally {
      await late.stop();
    }
  });

  it('is refused by an existing agent when a worker takes it after its client gave up: it never runs', async () => {
    const before = await startHarness({ name: 'before' });
    const agentId = uniqueId('abandoned');
    await before.agents.waitForTask(
      agentId,
      (await before.agents.submit(agentId, { goal: 'first', config: config() })).taskId,
    );
    await before.stop();

    const err = await failureOf(clientOf(before.taskQueue).submitExisting(agentId, { goal: 'abandoned' }));
    expect(err).toBeInstanceOf(NoWorkerError);
    // Past its acceptBy (the 2 s wait and the clock margin), a worker comes.
    await new Promise((r) => setTimeout(r, 5_000));
    const after = await startHarness({ name: 'after', taskQueue: before.taskQueue });
    try {
      const next = await after.agents.submitExisting(agentId, { goal: 'after the worker came' });
      await after.agents.waitForTask(agentId, next.taskId);
      // Had the abandoned submit run, it would be task-2.
      expect(next.taskId).toBe('task-2');
      expect((await after.agents.status(agentId)).tasks.map((t) => t.taskId)).toEqual(['task-1', 'task-2']);
    } finally {
      await after.stop();
    }
  });
});

describe('a submit sent again', () => {
  it.each([
    ['idempotency key', { idempotencyKey: 'order-7f3a' }],
    ['task id (not refused as a duplicate)', { taskId: 'task-report-1' }],
  ])('with the same %s is answered as the first was and runs once, before and after it ran', async (_what, again) => {
    const agentId = uniqueId('again');
    const cfg = config();
    const first = await h.agents.submit(agentId, { goal: 'once', config: cfg, ...again });
    expect(await h.agents.submit(agentId, { goal: 'once', config: cfg, ...again })).toEqual(first);
    await h.agents.waitForTask(agentId, first.taskId);
    expect(await h.agents.submitExisting(agentId, { goal: 'once', ...again })).toEqual(first);
    expect((await h.agents.status(agentId)).tasks.map((t) => t.taskId)).toEqual([first.taskId]);
  });

  it('after a try no worker took, runs once when a worker came', async () => {
    const before = await startHarness({ name: 'retry-before' });
    const agentId = uniqueId('retry');
    await before.agents.waitForTask(
      agentId,
      (await before.agents.submit(agentId, { goal: 'first', config: config() })).taskId,
    );
    await before.stop();
    const key = uniqueId('key');
    expect(
      await failureOf(clientOf(before.taskQueue).submitExisting(agentId, { goal: 'retried', idempotencyKey: key })),
    ).toBeInstanceOf(NoWorkerError);

    const after = await startHarness({ name: 'retry-after', taskQueue: before.taskQueue });
    try {
      const retried = await after.agents.submitExisting(agentId, { goal: 'retried', idempotencyKey: key });
      await after.agents.waitForTask(agentId, retried.taskId);
      const again = await after.agents.submitExisting(agentId, { goal: 'retried', idempotencyKey: key });
      expect(again).toEqual(retried);
      expect((await after.agents.status(agentId)).tasks.map((t) => t.taskId)).toEqual(['task-1', retried.taskId]);
    } finally {
      await after.stop();
    }
  });

  it('refuses an idempotency key that is not one', async () => {
    await expect(
      h.agents.submit(uniqueId('bad-key'), { goal: 'g', config: config(), idempotencyKey: 'has spaces' }),
    ).rejects.toThrow(/idempotency key must be 1-255 visible ASCII characters/);
  });
});
