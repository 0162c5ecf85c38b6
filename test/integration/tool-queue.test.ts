/**
 * Tool workers on a task queue of their own (`STARRY_TOOL_TASK_QUEUE`): the workflow worker runs the
 * workflows and LLM calls and no tool code; a tool worker (`starry worker --tools`, lib/workers/main.js
 * --tools) runs the tool calls and holds no LLM key. Both are separate processes; the histories say which
 * one ran what (the scheduled activity's task queue, the started one's worker identity, `<pid>@<host>`).
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { AgentClient } from '../../client/agent-client';
import { projectRoot } from '../../dev/paths';
import { until } from '../../dev/poll';
import { startToolWorkerProcess } from '../../dev/tool-worker';
import { agentWorkflowId } from '../../workflows/messages';
import {
  address,
  makeWorkspace,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { done, LIST, turn } from '../helpers/scenarios';
import { activitiesIn, historyOf, isActivityRunning, type TracedEvent } from '../helpers/workflow-history';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

let h: Harness;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // Client only: both workers are processes of their own.
  h = await startHarness({ name: 'toolq', withWorker: false });
});
afterAll(async () => {
  await Promise.all(children.map(killWorker));
  await h?.stop();
});

/** A workflow worker on `taskQueue` whose tools are on `<taskQueue>-tools`, and a tool worker there. */
async function startPair(
  taskQueue: string,
  toolEnv: Record<string, string> = {},
): Promise<{ main: ChildProcess; tools: ChildProcess; toolQueue: string }> {
  const toolQueue = `${taskQueue}-tools`;
  const main = await startWorkerProcess(taskQueue, address(), { env: { STARRY_TOOL_TASK_QUEUE: toolQueue } });
  children.push(main);
  const tools = await startWorkerProcess(toolQueue, address(), {
    tools: true,
    env: { STARRY_TASK_QUEUE: taskQueue, ...toolEnv },
  });
  children.push(tools);
  return { main, tools, toolQueue };
}

/** Each activity of a history: its type, the task queue it was scheduled on, the identity of the worker that ran it. */
function whoRan(events: TracedEvent[]): { type: string; queue: string; by: string }[] {
  const scheduled = new Map<string, { type: string; queue: string }>();
  const out: { type: string; queue: string; by: string }[] = [];
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) scheduled.set(String(e.eventId), { type: s.activityType?.name ?? '', queue: s.taskQueue?.name ?? '' });
    const started = e.activityTaskStartedEventAttributes;
    const of = started && scheduled.get(String(started.scheduledEventId));
    if (of) out.push({ ...of, by: started.identity ?? '' });
  }
  return out;
}

const ranBy = (child: ChildProcess) => expect.stringMatching(new RegExp(`^${child.pid}@`));

describe('tools on a task queue of their own', () => {
  it("runs a task's tool calls on the tool worker and its LLM calls on the workflow worker", async () => {
    const { main, tools, toolQueue } = await startPair(h.taskQueue);
    const workspace = makeWorkspace();
    const script = writeScript([
      turn({ name: 'fs.write', args: { path: 'out.txt', content: 'written by the tool worker' } }),
      turn({ name: 'fs.read', args: { path: 'out.txt' } }),
      done('read it back'),
    ]);
    const agentId = uniqueId('toolq');
    const { taskId, workflowId } = await h.agents.submit(agentId, {
      goal: 'write a file, then read it',
      config: scriptedConfig(script, workspace),
    });
    const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 });
    expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'read it back' });
    expect(result.toolCalls.map((c) => [c.name, c.status])).toEqual([
      ['fs.write', 'ok'],
      ['fs.read', 'ok'],
    ]);
    expect(readFileSync(path.join(workspace, 'out.txt'), 'utf8')).toBe('written by the tool worker');

    // The listing and the tool calls on the tool queue, run by the tool worker; the LLM calls by the workflow worker.
    const task = whoRan(await historyOf(h.agents.client, workflowId));
    expect(task).toEqual([
      { type: 'listTools', queue: toolQueue, by: ranBy(tools) },
      { type: 'llm', queue: h.taskQueue, by: ranBy(main) },
      { type: 'tool', queue: toolQueue, by: ranBy(tools) },
      { type: 'llm', queue: h.taskQueue, by: ranBy(main) },
      { type: 'tool', queue: toolQueue, by: ranBy(tools) },
      { type: 'llm', queue: h.taskQueue, by: ranBy(main) },
    ]);
    // The submit check: the workflow worker's half (guides, prices, budgets), then the tool worker's (policy, tools).
    const agent = whoRan(await historyOf(h.agents.client, agentWorkflowId(agentId)));
    expect(agent.filter((a) => a.type === 'checkTaskLimits')).toEqual([
      { type: 'checkTaskLimits', queue: h.taskQueue, by: ranBy(main) },
      { type: 'checkTaskLimits', queue: toolQueue, by: ranBy(tools) },
    ]);
  }, 120_000);

  it('a tool worker refuses to start with an LLM key in its environment, naming it', () => {
    const run = spawnSync(process.execPath, [path.join(projectRoot(), 'lib', 'workers', 'main.js'), '--tools'], {
      env: { ...process.env, STARRY_TOOL_TASK_QUEUE: uniqueId('tq-keys'), OPENAI_API_KEY: 'sk-not-for-tools' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/a tool worker holds no LLM key, but .*OPENAI_API_KEY.* set in its environment/);
  });

  it("the tool worker `starry dev` starts holds no LLM key, though the developer's environment has one", async () => {
    const tools = await startToolWorkerProcess(
      {
        TEMPORAL_ADDRESS: address(),
        STARRY_TOOL_TASK_QUEUE: uniqueId('tq-dev-tools'),
        OPENAI_API_KEY: 'sk-not-for-tools',
        GEMINI_API_KEY: 'not-for-tools',
      },
      () => undefined,
    );
    try {
      const environ = readFileSync(`/proc/${tools.child.pid}/environ`, 'utf8').split('\0');
      expect(environ.filter((v) => /^(OPENAI_API_KEY|GEMINI_API_KEY)=/.test(v))).toEqual([]);
      expect(environ).toContain(`TEMPORAL_ADDRESS=${address()}`);
    } finally {
      await tools.stop();
    }
  }, 60_000);

  it('with no tool worker polling, a task fails within seconds and a submit is refused, naming the queue and `starry worker --tools`', async () => {
    const taskQueue = uniqueId('tq-toolq-gone');
    const { tools, toolQueue } = await startPair(taskQueue);
    const agents = new AgentClient({ connection: h.connection, taskQueue });
    const workspace = makeWorkspace();
    const agentId = uniqueId('toolq-gone');
    // The first task's slow answer holds the agent while the second is checked (by the tool worker) and queued.
    const first = await agents.submit(agentId, {
      goal: 'answer slowly',
      config: scriptedConfig(writeScript([{ ...done('slow'), delayMs: 3000 }]), workspace),
    });
    const second = await agents.submit(agentId, {
      goal: 'list the workspace',
      config: scriptedConfig(writeScript([turn({ name: 'fs.list', args: {} }), done()]), workspace),
    });
    await until('the first task to call its LLM', () => isActivityRunning(agents.client, first.workflowId, 'llm'));
    await killWorker(tools);

    const failed = await agents.waitForTask(agentId, second.taskId, { timeoutMs: 60_000 });
    expect(failed).toMatchObject({ outcome: 'FAILED', error: { code: 'E_UNAVAILABLE', kind: 'fatal' } });
    expect(failed.error?.message).toContain(`no tool worker picked up the call on task queue ${toolQueue}`);
    expect(failed.error?.message).toContain('`starry worker --tools`');

    const started = Date.now();
    await expect(
      agents.submit(uniqueId('toolq-gone'), {
        goal: 'list the workspace',
        config: scriptedConfig(writeScript([done()]), workspace),
      }),
    ).rejects.toThrow(new RegExp(`no tool worker picked up the call on task queue ${toolQueue}`));
    // Refused on the schedule-to-start timeout (10 s), not the check's minute.
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 120_000);

  it('a tool call whose tool workers are all gone fails within seconds (the presence probe), not after a minute', async () => {
    const taskQueue = uniqueId('tq-toolq-lost');
    const { tools, toolQueue } = await startPair(taskQueue);
    const agents = new AgentClient({ connection: h.connection, taskQueue });
    const agentId = uniqueId('toolq-lost');
    // The tools are listed on the tool worker; it is gone by the time the model's answer calls one.
    const { taskId, workflowId } = await agents.submit(agentId, {
      goal: 'list the workspace',
      config: scriptedConfig(writeScript([{ ...turn(LIST), delayMs: 2000 }, done()]), makeWorkspace()),
    });
    await until('the task to call its LLM', () => isActivityRunning(agents.client, workflowId, 'llm'));
    await killWorker(tools);

    const failed = await agents.waitForTask(agentId, taskId, { timeoutMs: 90_000 });
    expect(failed).toMatchObject({ outcome: 'FAILED', error: { code: 'E_UNAVAILABLE', kind: 'fatal' } });
    expect(failed.error?.message).toContain(`no tool worker picked up the call on task queue ${toolQueue}`);
    const events = await historyOf(agents.client, workflowId);
    // The call timed out unpicked, the probe on the presence queue found nobody, and no second wait followed.
    expect(activitiesIn(events).map((a) => [a.activityType, a.events.at(-1)])).toEqual([
      ['listTools', 'completed'],
      ['llm', 'completed'],
      ['tool', 'timedOut'],
      ['toolWorkerPresent', 'timedOut'],
    ]);
    const probe = events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'toolWorkerPresent',
    );
    expect(probe?.activityTaskScheduledEventAttributes?.taskQueue?.name).toBe(`${toolQueue}-presence`);
    // From the call's scheduling to the task's end: the first wait and the probe's (5 s each), not the minute it was.
    const at = (e: TracedEvent | undefined) => Number(e?.eventTime?.seconds ?? 0);
    const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'tool');
    expect(at(events.at(-1)) - at(scheduled)).toBeLessThan(15);
  }, 120_000);

  it('a tool call that waits on a busy tool worker waits on, and runs when a slot frees', async () => {
    const taskQueue = uniqueId('tq-toolq-busy');
    // One tool call at a time: the sleeper's shell command holds the only slot.
    const { tools } = await startPair(taskQueue, { STARRY_MAX_CONCURRENT_TOOL_CALLS: '1' });
    const agents = new AgentClient({ connection: h.connection, taskQueue });
    const workspace = makeWorkspace();
    // The lister's tools are listed first, and its call comes while the sleeper holds the slot.
    const listerId = uniqueId('toolq-lister');
    const sleeperId = uniqueId('toolq-sleeper');
    const lister = await agents.submit(listerId, {
      goal: 'list the workspace',
      config: scriptedConfig(writeScript([{ ...turn(LIST), delayMs: 10_000 }, done('listed')]), workspace),
    });
    await until('the lister to call its LLM', () => isActivityRunning(agents.client, lister.workflowId, 'llm'));
    const sleeper = await agents.submit(sleeperId, {
      goal: 'sleep',
      config: scriptedConfig(
        writeScript([turn({ name: 'shell.run', args: { command: 'sleep', args: ['20'] } }), done('slept')]),
        workspace,
      ),
    });
    await until('the sleeper to run its shell command', () =>
      isActivityRunning(agents.client, sleeper.workflowId, 'tool'),
    );

    const listed = await agents.waitForTask(listerId, lister.taskId, { timeoutMs: 120_000 });
    expect(listed).toMatchObject({ outcome: 'COMPLETED', finalText: 'listed' });
    expect(listed.toolCalls.map((c) => [c.name, c.status])).toEqual([['fs.list', 'ok']]);
    const events = await historyOf(agents.client, lister.workflowId);
    // It waited: its first wait timed out, the busy fleet answered the probe, the call ran on the tool worker.
    expect(activitiesIn(events).map((a) => [a.activityType, a.events.at(-1)])).toEqual([
      ['listTools', 'completed'],
      ['llm', 'completed'],
      ['tool', 'timedOut'],
      ['toolWorkerPresent', 'completed'],
      ['tool', 'completed'],
      ['llm', 'completed'],
    ]);
    expect(whoRan(events).filter((a) => a.type === 'tool')).toEqual([
      { type: 'tool', queue: expect.any(String), by: ranBy(tools) },
    ]);
    await expect(agents.waitForTask(sleeperId, sleeper.taskId, { timeoutMs: 60_000 })).resolves.toMatchObject({
      outcome: 'COMPLETED',
    });
  }, 180_000);
});
