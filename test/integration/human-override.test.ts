/**
 * Human override through real workflows on a real server (issue 4, docs/ARCHITECTURE.md#workflows): the priority
 * inbox, SYSTEM_HALT with a full queue and a call in flight, lockout and `admin:unlock`, the `message`
 * signal, and continue-as-new carrying the agent's state. No timing assertions here: the latencies are
 * measured by bench/halt-latency.ts.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { AgentClient, InvalidArgumentError, RefusedError } from '../../client/agent-client';
import type { AgentConfigInput } from '../../core/config';
import { QUEUE_PRIORITY } from '../../core/priority-inbox';
import type { AgentWorkflowInput } from '../../workflows/agent';
import {
  agentWorkflowId,
  haltSignal,
  submitTaskUpdate,
  taskStateQuery,
  taskStatusQuery,
  taskWorkflowId,
} from '../../workflows/messages';
import { startGatedHarness, type LlmGate } from '../helpers/gated-llm';
import {
  alertFor,
  makeWorkspace,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { eventually } from '../../dev/poll';
import { activitiesIn, activityRunning, eventIdOf, firstPayload, historyOf } from '../helpers/workflow-history';
import { DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS } from '../../workers/env';

// A project-level testTimeout is not applied by jest; these tests run real workflows.
jest.setTimeout(120_000);

let h: Harness;
let g: Harness & { gate: LlmGate };
beforeAll(async () => {
  [h, g] = await Promise.all([startHarness({ name: 'override' }), startGatedHarness({ name: 'override-gated' })]);
});
afterAll(async () => {
  await Promise.all([h?.stop(), g?.stop()]);
});

const DONE = { text: 'Done.', usage: { inputTokens: 10, outputTokens: 5 } };
const LIST = { toolCalls: [{ name: 'fs.list', args: {} }], usage: { inputTokens: 100, outputTokens: 10 } };

/** A config whose scripted controller plays `turns`, in a fresh workspace with `notes.md`. */
function configFor(turns: unknown[], overrides: AgentConfigInput = {}) {
  return scriptedConfig(writeScript(turns), makeWorkspace({ 'notes.md': '# Notes\n' }), overrides);
}

/** Submit and expect a refusal; returns its message. */
async function refusal(
  agents: AgentClient,
  agentId: string,
  input: Parameters<AgentClient['submit']>[1],
): Promise<string> {
  const err = await agents.submit(agentId, input).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RefusedError);
  expect((err as RefusedError).type).toBe('Refused');
  return (err as Error).message;
}

/** A new agent running a task whose LLM call is in flight (30 s), with a quick task queued behind it. */
async function slowTaskThenAnother(prefix: string) {
  const agentId = uniqueId(prefix);
  const config = configFor([{ delayMs: 30_000, text: 'slow turn', toolCalls: [{ name: 'fs.list', args: {} }] }, DONE]);
  const first = await h.agents.submit(agentId, { goal: 'a slow task', config });
  const second = await h.agents.submit(agentId, { goal: 'the next task', config: configFor([DONE]) });
  const taskWf = taskWorkflowId(agentId, first.taskId);
  await activityRunning(h.agents.client, taskWf, 'llm');
  return { agentId, first, second, taskWf };
}

const notSuspended = { after: (r: { outcome: string }) => r.outcome !== 'SUSPENDED' };

describe('SYSTEM_HALT', () => {
  it('stops the agent at once with 100 tasks queued and an LLM call in flight, cancels the call and records every queued task', async () => {
    const agentId = uniqueId('halt-llm');
    const config = configFor([
      { delayMs: 30_000, text: 'slow turn', toolCalls: [{ name: 'fs.list', args: {} }] },
      DONE,
    ]);
    const { taskId } = await h.agents.submit(agentId, { goal: 'a slow task', config });
    const taskWf = taskWorkflowId(agentId, taskId);
    await activityRunning(h.agents.client, taskWf, 'llm');
    // The running task's own status query: its result so far, with its counters.
    const status = await h.agents.client.workflow.getHandle(taskWf).query(taskStatusQuery);
    expect(status).toMatchObject({
      running: true,
      halted: false,
      agentId,
      taskId,
      workflowId: taskWf,
      ticks: 1,
      tokensUsed: 0,
      toolCalls: [],
      injections: [],
      counters: { consecutiveFailures: 0 },
    });
    // Its 0.1 name, `state` (the agent's query's too), still answers until 0.2.
    expect(await h.agents.client.workflow.getHandle(taskWf).query(taskStateQuery)).toEqual(status);

    const queued = Array.from({ length: 100 }, (_, i) => ({
      taskId: `task-q-${String(i + 1).padStart(3, '0')}`,
      goal: `queued goal ${i + 1}`,
      priority: 1 + (i % 9),
    }));
    for (const q of queued) await h.agents.submit(agentId, { ...q, config });
    const before = await h.agents.status(agentId);
    expect(before).toMatchObject({ agentState: 'EXECUTING', currentTask: { taskId } });
    expect(before.queue).toHaveLength(100);

    await h.agents.halt(agentId, { by: 'test operator', note: 'kill switch drill' });
    // The query is answered after the signal: the state it shows is the one the handler left.
    const after = await h.agents.status(agentId);
    expect(after.agentState).toBe('STOPPED');
    expect(after.reason).toMatchObject({ code: 'SYSTEM_HALT' });
    expect(after.reason?.message).toContain('test operator');
    expect(after.queue).toEqual([]);
    expect(after.cancelledTasks).toHaveLength(100);
    expect(new Map(after.cancelledTasks.map((c) => [c.taskId, c.goal]))).toEqual(
      new Map(queued.map((q) => [q.taskId, q.goal])),
    );

    const result = await h.agents.waitForTask(agentId, taskId);
    expect(result).toMatchObject({
      taskId,
      outcome: 'CANCELLED',
      agentState: 'STOPPED',
      reason: { code: 'SYSTEM_HALT' },
      ticks: 1,
      toolCalls: [],
    });

    // The LLM activity saw the cancellation and acknowledged it; it never ran to its end; no tool started.
    const events = await historyOf(h.agents.client, taskWf);
    const activities = activitiesIn(events);
    expect(activities.map((a) => a.activityType)).toEqual(['llm']);
    expect(activities[0]?.events).toEqual(expect.arrayContaining(['cancelRequested', 'canceled']));
    expect(activities[0]?.events).not.toContain('completed');
    expect(activities[0]?.events).not.toContain('failed');
    // The agent forwards the halt as a cancellation request, and the task ends CANCELED (the Web UI's word for it).
    const haltAt = eventIdOf(events, 'workflowExecutionCancelRequested');
    expect(haltAt).toBeDefined();
    expect(events.at(-1)?.kind).toBe('workflowExecutionCanceled');
    expect((await h.agents.client.workflow.getHandle(taskWf).describe()).status.name).toBe('CANCELLED');
    const scheduledAfterHalt = events.filter(
      (e) => e.kind === 'activityTaskScheduled' && Number(e.eventId) > (haltAt ?? 0),
    );
    expect(scheduledAfterHalt).toEqual([]);

    const final = await h.agents.status(agentId);
    expect(final).toMatchObject({ agentState: 'STOPPED', queue: [], reason: { code: 'SYSTEM_HALT' } });
    expect(final.currentTask).toBeUndefined();
    expect(final.cancelledTasks).toHaveLength(100);
    expect(final.tasks.map((t) => [t.taskId, t.outcome])).toEqual([[taskId, 'CANCELLED']]);
  });

  it('puts the agent before its tasks on the task queue, a halted agent and its task before every agent, until unlock', async () => {
    const agentId = uniqueId('halt-priority');
    const config = configFor([{ delayMs: 30_000, text: 'slow turn' }, DONE]);
    const { taskId } = await h.agents.submit(agentId, { goal: 'a slow task', config });
    const agentWf = agentWorkflowId(agentId);
    const taskWf = taskWorkflowId(agentId, taskId);
    await activityRunning(h.agents.client, taskWf, 'llm');
    const priorityOf = async (workflowId: string) =>
      (await h.agents.client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.priority
        ?.priorityKey;
    expect(QUEUE_PRIORITY.halt).toBeLessThan(QUEUE_PRIORITY.agent);
    expect(QUEUE_PRIORITY.agent).toBeLessThan(QUEUE_PRIORITY.task);
    expect(await priorityOf(agentWf)).toBe(QUEUE_PRIORITY.agent);
    expect(await priorityOf(taskWf)).toBe(QUEUE_PRIORITY.task);

    await h.agents.halt(agentId, { by: 'test operator' });
    // Raised before the halt returns: the agent's workflow task that takes the signal, and the task's that
    // cancels its call, go first.
    expect(await priorityOf(agentWf)).toBe(QUEUE_PRIORITY.halt);
    expect(await priorityOf(taskWf)).toBe(QUEUE_PRIORITY.halt);
    const agentEvents = await historyOf(h.agents.client, agentWf);
    const raisedAt = eventIdOf(agentEvents, 'workflowExecutionOptionsUpdated') ?? Infinity;
    expect(raisedAt).toBeLessThan(eventIdOf(agentEvents, 'workflowExecutionSignaled') ?? 0);
    expect((await historyOf(h.agents.client, taskWf)).map((e) => e.kind)).toContain('workflowExecutionOptionsUpdated');
    expect(await h.agents.waitForTask(agentId, taskId)).toMatchObject({ outcome: 'CANCELLED', agentState: 'STOPPED' });

    await h.agents.unlock(agentId, { by: 'test admin' });
    expect(await priorityOf(agentWf)).toBe(QUEUE_PRIORITY.agent);
  });

  it('runs a few workflow tasks at once, so the backlog waits on the server where priority orders it', () => {
    expect(h.worker?.options.tuner).toMatchObject({
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS },
    });
    expect(DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS).toBeLessThan(10);
  });

  it('cancels a running shell.run and starts nothing after it in the same turn', async () => {
    const agentId = uniqueId('halt-tool');
    const config = configFor([
      {
        toolCalls: [
          { name: 'shell.run', args: { command: 'sleep', args: ['30'] } },
          { name: 'fs.list', args: {} },
        ],
      },
      DONE,
    ]);
    const { taskId } = await h.agents.submit(agentId, { goal: 'sleep, then list', config });
    const taskWf = taskWorkflowId(agentId, taskId);
    await activityRunning(h.agents.client, taskWf, 'tool');

    await h.agents.halt(agentId);
    const result = await h.agents.waitForTask(agentId, taskId);
    expect(result).toMatchObject({ outcome: 'CANCELLED', agentState: 'STOPPED', reason: { code: 'SYSTEM_HALT' } });
    expect(result.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([
      ['shell.run', 'skipped', 'E_SKIPPED'],
      ['fs.list', 'skipped', 'E_SKIPPED'],
    ]);
    expect(result.toolCalls[0]?.error?.message).toMatch(/cancelled while running/);
    expect(result.toolCalls[1]?.error?.message).toMatch(/SYSTEM_HALT/);

    const events = await historyOf(h.agents.client, taskWf);
    const activities = activitiesIn(events);
    expect(activities.map((a) => [a.activityType, (a.input as { name?: string }).name])).toEqual([
      ['llm', undefined],
      ['tool', 'shell.run'],
    ]);
    // The tool activity acknowledged the cancellation: it rejects only once the killed process closed.
    expect(activities[1]?.events).toEqual(expect.arrayContaining(['cancelRequested', 'canceled']));
    expect(activities[1]?.events).not.toContain('completed');
    const haltAt = eventIdOf(events, 'workflowExecutionCancelRequested') ?? 0;
    expect(haltAt).toBeGreaterThan(0);
    expect(events.filter((e) => e.kind === 'activityTaskScheduled' && Number(e.eventId) > haltAt)).toEqual([]);
    expect(events.at(-1)?.kind).toBe('workflowExecutionCanceled');
  });

  it('treats a task cancelled from outside (Web UI, temporal workflow cancel) as halted: CANCELED, recorded, and the agent goes on', async () => {
    const { agentId, first, second, taskWf } = await slowTaskThenAnother('cancel-outside');

    await h.agents.client.workflow.getHandle(taskWf).cancel();
    expect(await h.agents.waitForTask(agentId, first.taskId)).toMatchObject({
      outcome: 'CANCELLED',
      ticks: 1,
      toolCalls: [],
    });
    expect((await h.agents.client.workflow.getHandle(taskWf).describe()).status.name).toBe('CANCELLED');
    const llm = activitiesIn(await historyOf(h.agents.client, taskWf))[0];
    expect(llm?.events).toEqual(expect.arrayContaining(['cancelRequested', 'canceled']));
    // Not a halt of the agent: it is not locked, and its next task runs.
    expect((await h.agents.waitForTask(agentId, second.taskId)).outcome).toBe('COMPLETED');
    expect((await h.agents.status(agentId)).agentState).toBe('WAITING_FOR_EVENT');
  });

  const webUiHalt =
    'stops a task sent SYSTEM_HALT itself (the Web UI’s signal on the task): its call in flight cancelled, nothing started after, the agent goes on';
  it(webUiHalt, async () => {
    const { agentId, first, second, taskWf } = await slowTaskThenAnother('halt-own');

    await h.agents.client.workflow.getHandle(taskWf).signal(haltSignal, { by: 'web ui' });
    expect(await h.agents.waitForTask(agentId, first.taskId)).toMatchObject({
      outcome: 'CANCELLED',
      ticks: 1,
      toolCalls: [],
    });
    const events = await historyOf(h.agents.client, taskWf);
    const activities = activitiesIn(events);
    expect(activities.map((a) => a.activityType)).toEqual(['llm']);
    expect(activities[0]?.events).toEqual(expect.arrayContaining(['cancelRequested', 'canceled']));
    expect(activities[0]?.events).not.toContain('completed');
    const haltAt = eventIdOf(events, 'workflowExecutionSignaled') ?? 0;
    expect(haltAt).toBeGreaterThan(0);
    expect(events.filter((e) => e.kind === 'activityTaskScheduled' && Number(e.eventId) > haltAt)).toEqual([]);
    // The task stopped, not the agent: its next task runs.
    expect((await h.agents.waitForTask(agentId, second.taskId)).outcome).toBe('COMPLETED');
  });

  it('refuses tasks while STOPPED by a halt, naming the state and reason, and accepts them again after unlock', async () => {
    const agentId = uniqueId('halt-refuse');
    const config = configFor([DONE]);
    await h.agents.waitForTask(agentId, (await h.agents.submit(agentId, { goal: 'first', config })).taskId);
    await h.agents.halt(agentId, { by: 'ops' });
    expect((await h.agents.status(agentId)).agentState).toBe('STOPPED');

    const message = await refusal(h.agents, agentId, { goal: 'refused', config });
    expect(message).toContain('STOPPED');
    expect(message).toContain('SYSTEM_HALT');
    expect(message).toContain(`starry unlock ${agentId}`);

    const unlocked = await h.agents.unlock(agentId, { by: 'ops', note: 'drill over' });
    expect(unlocked).toMatchObject({ unlocked: true, agentState: 'WAITING_FOR_EVENT' });
    const { taskId } = await h.agents.submit(agentId, { goal: 'accepted', config });
    expect(await h.agents.waitForTask(agentId, taskId)).toMatchObject({
      outcome: 'COMPLETED',
      agentState: 'WAITING_FOR_EVENT',
    });
  });

  it('resubmits a task the halt cancelled, in one call, with its id, goal, priority and own config', async () => {
    const agentId = uniqueId('halt-resubmit');
    const slow = configFor([{ delayMs: 30_000, text: 'slow' }, DONE]);
    const { taskId: running } = await h.agents.submit(agentId, { goal: 'slow', config: slow });
    await activityRunning(h.agents.client, taskWorkflowId(agentId, running), 'llm');
    const own = configFor([LIST, DONE], { guide: 'neutral' });
    await h.agents.submit(agentId, { goal: 'list the workspace', config: own, priority: 2, taskId: 'task-keep' });
    await h.agents.halt(agentId, { by: 'ops' });
    await expect(h.agents.resubmit(agentId, 'task-keep')).rejects.toThrow(RefusedError);
    await h.agents.unlock(agentId, { note: 'resume work' });

    await expect(h.agents.resubmit(agentId, 'task-nope')).rejects.toThrow(
      /has no cancelled task task-nope: its cancelled tasks are task-keep/,
    );
    const again = await h.agents.resubmit(agentId, 'task-keep');
    expect(again.taskId).toBe('task-keep');
    expect((await h.agents.status(agentId)).cancelledTasks).toEqual([]);
    const r = await h.agents.waitForTask(agentId, 'task-keep');
    expect(r).toMatchObject({ outcome: 'COMPLETED', finalText: 'Done.' });
    expect(r.toolCalls.map((c) => c.name)).toEqual(['fs.list']);
  });
});

describe('the priority inbox', () => {
  it('runs queued tasks by priority, first come first served within a priority, and returns each task id', async () => {
    const agentId = uniqueId('priority');
    const config = configFor([DONE]);
    g.gate.hold(agentId);
    const first = await g.agents.submit(agentId, { goal: 'runs first', config });
    expect(first).toMatchObject({ taskId: 'task-1', workflowId: taskWorkflowId(agentId, 'task-1'), position: 0 });
    await g.gate.arrived(agentId);

    const submitted = [];
    for (const [goal, priority] of [
      ['a p5', 5],
      ['b p1', 1],
      ['c p9', 9],
      ['d p1', 1],
      ['e p5', 5],
      ['f default', undefined],
    ] as const) {
      submitted.push(await g.agents.submit(agentId, { goal, config, ...(priority !== undefined ? { priority } : {}) }));
    }
    expect(submitted.map((s) => s.taskId)).toEqual(['task-2', 'task-3', 'task-4', 'task-5', 'task-6', 'task-7']);
    const queued = await g.agents.status(agentId);
    expect(queued.currentTask?.taskId).toBe('task-1');
    expect(queued.queue.map((q) => [q.goal, q.priority])).toEqual([
      ['b p1', 1],
      ['d p1', 1],
      ['a p5', 5],
      ['e p5', 5],
      ['f default', 5],
      ['c p9', 9],
    ]);

    g.gate.release(agentId);
    await g.agents.waitForTask(agentId, 'task-4');
    const done = await eventually('every task to finish', async () => {
      const s = await g.agents.status(agentId);
      return s.tasks.length === 7 && !s.currentTask ? s : undefined;
    });
    expect(done.tasks.map((t) => t.taskId)).toEqual([
      'task-1',
      'task-3',
      'task-5',
      'task-2',
      'task-6',
      'task-7',
      'task-4',
    ]);
    expect(done.tasks.every((t) => t.outcome === 'COMPLETED')).toBe(true);
  });

  it('treats a priority outside 1..9 as a bad request, from the client and sent raw to the workflow', async () => {
    const agentId = uniqueId('priority-bad');
    const config = configFor([DONE, DONE]);
    await h.agents.waitForTask(agentId, (await h.agents.submit(agentId, { goal: 'first', config })).taskId);
    await expect(h.agents.submit(agentId, { goal: 'halt-like', config, priority: 0 })).rejects.toThrow(
      InvalidArgumentError,
    );
    await expect(h.agents.submit(agentId, { goal: 'halt-like', config, priority: 0 })).rejects.toThrow(
      /priority: .*0 is reserved for SYSTEM_HALT/,
    );
    // A client that skips the check meets the workflow's own validator: a typed failure, nothing queued.
    const raw = h.agents.client.workflow
      .getHandle(agentWorkflowId(agentId))
      .executeUpdate(submitTaskUpdate, { args: [{ goal: 'too low', priority: 10 }] });
    const err = await raw.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((err as WorkflowUpdateFailedError).cause).toMatchObject({
      type: 'InvalidArgument',
      message: expect.stringMatching(/priority: priority must be 1..9/),
    });
    const s = await h.agents.status(agentId);
    expect(s.queue).toEqual([]);
    expect(s.agentState).toBe('WAITING_FOR_EVENT');
    expect(
      (await h.agents.waitForTask(agentId, (await h.agents.submit(agentId, { goal: 'next', config })).taskId)).outcome,
    ).toBe('COMPLETED');
  });
});

/** Each breaker that suspends a task, with a config and script that trip it on the first task. */
const SUSPENDING = [
  {
    code: 'LOOP_CAP',
    agentState: 'SAFETY_LOCKOUT',
    turns: [LIST, LIST, DONE],
    overrides: { safety: { maxTicks: 2 } },
    unlock: {},
    resumedTicks: 3,
  },
  {
    code: 'REPEATED_FAILURE',
    agentState: 'SAFETY_LOCKOUT',
    turns: [{ toolCalls: Array.from({ length: 4 }, () => ({ name: 'fs.read', args: { path: 'missing.txt' } })) }, DONE],
    overrides: {},
    unlock: {},
    resumedTicks: 2,
  },
  {
    code: 'ERROR_CASCADE',
    agentState: 'ERROR_PAUSED',
    turns: [
      {
        toolCalls: [
          { name: 'fs.read', args: { path: 'a.txt' } },
          { name: 'fs.read', args: { path: 'b.txt' } },
          { name: 'fs.list', args: {} },
        ],
      },
      DONE,
    ],
    overrides: { safety: { cascadeWindow: 3, cascadeErrors: 2 } },
    unlock: {},
    resumedTicks: 2,
  },
  {
    code: 'BUDGET_EXHAUSTED',
    agentState: 'STOPPED',
    turns: [
      { ...LIST, usage: { inputTokens: 500, outputTokens: 100 } },
      { ...LIST, usage: { inputTokens: 500, outputTokens: 100 } },
      DONE,
    ],
    overrides: { safety: { tokenBudget: 1000 } },
    unlock: { addTokens: 500 },
    // The stopped tick had started (the budget is checked inside it), so the resumed call is tick 4.
    resumedTicks: 4,
  },
] as const;

describe('lockout and admin:unlock', () => {
  it.each(SUSPENDING)(
    'refuses tasks while locked by $code ($agentState), and unlock with resume completes the suspended task',
    async ({ code, agentState, turns, overrides, unlock, resumedTicks }) => {
      const agentId = uniqueId(`lock-${code.toLowerCase()}`);
      const config = configFor([...turns], overrides as AgentConfigInput);
      const { taskId } = await h.agents.submit(agentId, { goal: `trip ${code}`, config });
      const suspended = await h.agents.waitForTask(agentId, taskId);
      expect(suspended).toMatchObject({ outcome: 'SUSPENDED', agentState, reason: { code } });
      const locked = await h.agents.status(agentId);
      expect(locked).toMatchObject({ agentState, reason: { code }, suspendedTask: { taskId } });

      const message = await refusal(h.agents, agentId, { goal: 'refused while locked', config });
      expect(message).toContain(agentState);
      expect(message).toContain(code);
      expect(message).toContain(locked.reason?.message);

      const unlocked = await h.agents.unlock(agentId, {
        ...unlock,
        resume: true,
        by: 'test',
        note: `resume after ${code}`,
      });
      expect(unlocked).toMatchObject({ unlocked: true, agentState: 'WAITING_FOR_EVENT' });
      expect(unlocked.message).toContain(`task ${taskId} resumes with a fresh tick allowance`);

      const resumed = await h.agents.waitForTask(agentId, taskId, notSuspended);
      expect(resumed).toMatchObject({
        taskId,
        outcome: 'COMPLETED',
        agentState: 'WAITING_FOR_EVENT',
        ticks: resumedTicks,
        finalText: 'Done.',
      });
      expect(resumed.reason).toBeUndefined();
      // The transcript runs on from where the task stopped.
      expect(resumed.toolCalls.length).toBe(suspended.toolCalls.length);
      expect(resumed.toolCalls).toEqual(suspended.toolCalls);

      const next = await h.agents.submit(agentId, {
        goal: 'accepted after unlock',
        config: configFor([DONE], overrides as AgentConfigInput),
      });
      expect(await h.agents.waitForTask(agentId, next.taskId)).toMatchObject({ outcome: 'COMPLETED' });
      const s = await h.agents.status(agentId);
      expect(s).toMatchObject({ agentState: 'WAITING_FOR_EVENT', queue: [] });
      expect(s.suspendedTask).toBeUndefined();
    },
  );

  it('refuses tasks while ERROR_PAUSED after a fatal LLM error, and accepts them after unlock', async () => {
    const agentId = uniqueId('lock-fatal');
    const { taskId } = await h.agents.submit(agentId, {
      goal: 'auth fails',
      config: configFor([{ error: { status: 401 } }]),
    });
    expect(await h.agents.waitForTask(agentId, taskId)).toMatchObject({
      outcome: 'FAILED',
      agentState: 'ERROR_PAUSED',
      reason: { code: 'FATAL' },
    });
    expect(await alertFor(h, agentId)).toMatchObject({
      type: 'openstarry.alert',
      agentState: 'ERROR_PAUSED',
      reason: { code: 'FATAL' },
    });

    const message = await refusal(h.agents, agentId, { goal: 'refused', config: configFor([DONE]) });
    expect(message).toContain('ERROR_PAUSED');
    expect(message).toContain('FATAL');

    const unlocked = await h.agents.unlock(agentId, { note: 'key rotated' });
    expect(unlocked).toMatchObject({ unlocked: true, agentState: 'WAITING_FOR_EVENT' });
    expect(unlocked.message).not.toMatch(/resume|ABORTED/);
    const next = await h.agents.submit(agentId, { goal: 'works now', config: configFor([DONE]) });
    expect(await h.agents.waitForTask(agentId, next.taskId)).toMatchObject({ outcome: 'COMPLETED' });
  });

  it('ends the suspended task ABORTED with its transcript kept when unlocked without resume, and records who unlocked and why', async () => {
    const agentId = uniqueId('lock-abort');
    const config = configFor([LIST, LIST, DONE], { safety: { maxTicks: 2 } });
    const { taskId } = await h.agents.submit(agentId, { goal: 'loops', config });
    const suspended = await h.agents.waitForTask(agentId, taskId);
    expect(suspended).toMatchObject({
      outcome: 'SUSPENDED',
      agentState: 'SAFETY_LOCKOUT',
      reason: { code: 'LOOP_CAP' },
    });

    const unlocked = await h.agents.unlock(agentId, { by: 'alice', note: 'it was looping on fs.list' });
    expect(unlocked).toMatchObject({ unlocked: true, agentState: 'WAITING_FOR_EVENT' });
    expect(unlocked.message).toContain(`task ${taskId} ended ABORTED (transcript kept)`);

    const s = await h.agents.status(agentId);
    expect(s.agentState).toBe('WAITING_FOR_EVENT');
    expect(s.reason).toBeUndefined();
    expect(s.suspendedTask).toBeUndefined();
    const aborted = s.tasks.find((t) => t.taskId === taskId);
    expect(aborted).toMatchObject({ outcome: 'ABORTED', ticks: 2 });
    expect(aborted?.toolCalls).toEqual(suspended.toolCalls);
    expect(aborted?.toolCalls).toHaveLength(2);
    expect(s.unlocks).toEqual([
      {
        by: 'alice',
        note: 'it was looping on fs.list',
        from: 'SAFETY_LOCKOUT',
        reason: suspended.reason,
        resume: false,
        addTokens: 0,
      },
    ]);
    expect(s.counters).toEqual({ consecutiveFailures: 0, repeat: null, window: [] });

    // The update, with who and why, is in the agent's history.
    const events = await historyOf(h.agents.client, agentWorkflowId(agentId));
    const accepted = events.filter(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'admin:unlock',
    );
    expect(accepted).toHaveLength(1);
    expect(
      firstPayload(accepted[0]?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args),
    ).toEqual({
      by: 'alice',
      note: 'it was looping on fs.list',
    });
    const updateId = accepted[0]?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId;
    const completed = events.find(
      (e) => e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId === updateId,
    );
    expect(firstPayload(completed?.workflowExecutionUpdateCompletedEventAttributes?.outcome?.success)).toMatchObject({
      unlocked: true,
    });

    // The agent takes tasks again; the aborted one stays aborted.
    const next = await h.agents.submit(agentId, { goal: 'next', config: configFor([DONE]) });
    expect(await h.agents.waitForTask(agentId, next.taskId)).toMatchObject({ outcome: 'COMPLETED' });
    expect((await h.agents.status(agentId)).tasks.find((t) => t.taskId === taskId)?.outcome).toBe('ABORTED');
  });

  it('says unlocking an agent that is not locked is a no-op, and changes nothing', async () => {
    const agentId = uniqueId('unlock-noop');
    const { taskId } = await h.agents.submit(agentId, { goal: 'fine', config: configFor([DONE]) });
    await h.agents.waitForTask(agentId, taskId);
    const before = await h.agents.status(agentId);

    const out = await h.agents.unlock(agentId, { resume: true, addTokens: 1000, by: 'bob' });
    expect(out).toEqual({
      unlocked: false,
      agentState: 'WAITING_FOR_EVENT',
      message: `agent ${agentId} is not locked (WAITING_FOR_EVENT): nothing to unlock`,
    });
    expect(await h.agents.status(agentId)).toEqual(before);
  });

  it('keeps the added tokens for later tasks after a budget stop unlocked with addTokens', async () => {
    const agentId = uniqueId('budget-add');
    const turns = [
      { ...LIST, usage: { inputTokens: 500, outputTokens: 100 } },
      { ...LIST, usage: { inputTokens: 500, outputTokens: 100 } },
      DONE,
    ];
    const config = configFor(turns, { safety: { tokenBudget: 1000 } });
    const { taskId } = await h.agents.submit(agentId, { goal: 'spend', config });
    expect(await h.agents.waitForTask(agentId, taskId)).toMatchObject({
      outcome: 'SUSPENDED',
      agentState: 'STOPPED',
      reason: { code: 'BUDGET_EXHAUSTED' },
    });

    const unlocked = await h.agents.unlock(agentId, { addTokens: 5000, note: 'more budget' });
    expect(unlocked.message).toContain('ended ABORTED');
    expect(unlocked.message).not.toContain('will stop again');
    expect(await h.agents.status(agentId)).toMatchObject({
      agentState: 'WAITING_FOR_EVENT',
      tokensUsed: 1200,
      tokenBudget: 6000,
    });

    // The next submit carries the same config (tokenBudget 1000): the tokens a human added still count.
    const next = await h.agents.submit(agentId, { goal: 'spend more', config });
    expect(await h.agents.waitForTask(agentId, next.taskId)).toMatchObject({ outcome: 'COMPLETED', tokensUsed: 1215 });
    expect(await h.agents.status(agentId)).toMatchObject({
      agentState: 'WAITING_FOR_EVENT',
      tokensUsed: 2415,
      tokenBudget: 6000,
    });
  });

  it('says plainly that the next LLM call will stop again when a budget stop is unlocked without addTokens', async () => {
    const agentId = uniqueId('budget-noadd');
    const config = configFor([{ ...LIST, usage: { inputTokens: 900, outputTokens: 200 } }, DONE], {
      safety: { tokenBudget: 1000 },
    });
    const { taskId } = await h.agents.submit(agentId, { goal: 'spend it all', config });
    expect(await h.agents.waitForTask(agentId, taskId)).toMatchObject({
      outcome: 'SUSPENDED',
      reason: { code: 'BUDGET_EXHAUSTED' },
    });

    const unlocked = await h.agents.unlock(agentId, { resume: true });
    expect(unlocked).toMatchObject({ unlocked: true, agentState: 'WAITING_FOR_EVENT' });
    expect(unlocked.message).toContain('the next LLM call will stop again');
    expect(unlocked.message).toContain('1100 of 1000 tokens');
    // The resumed run is the task workflow's second run; it stops at its first budget check.
    const taskWf = taskWorkflowId(agentId, taskId);
    await eventually('the resumed run to end', async () => {
      const events = await historyOf(h.agents.client, agentWorkflowId(agentId));
      const ended = events.filter(
        (e) => e.childWorkflowExecutionCompletedEventAttributes?.workflowExecution?.workflowId === taskWf,
      );
      return ended.length === 2 ? true : undefined;
    });
    const s = await h.agents.status(agentId);
    expect(s).toMatchObject({
      agentState: 'STOPPED',
      reason: { code: 'BUDGET_EXHAUSTED' },
      tokensUsed: 1100,
      suspendedTask: { taskId },
    });
    expect(s.tasks.find((t) => t.taskId === taskId)).toMatchObject({
      outcome: 'SUSPENDED',
      reason: { code: 'BUDGET_EXHAUSTED' },
      tokensUsed: 1100,
    });
  });
});

describe('the message signal', () => {
  it('appends a human message to the running task before its next LLM call', async () => {
    const agentId = uniqueId('message');
    g.gate.hold(agentId);
    const { taskId } = await g.agents.submit(agentId, { goal: 'list, then answer', config: configFor([LIST, DONE]) });
    const call1 = await g.gate.arrived(agentId);
    expect(call1.callNumber).toBe(1);

    await g.agents.message(agentId, 'Please also read notes.md.', 'bob');
    const taskWf = taskWorkflowId(agentId, taskId);
    // Delivered to the running task (forwarded by the agent) before its LLM call answers.
    await eventually('the message in the task history', async () => {
      const events = await historyOf(g.agents.client, taskWf);
      return eventIdOf(
        events,
        'workflowExecutionSignaled',
        (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'message',
      );
    });
    // Let call 1 answer and hold again at once, so call 2 is inspected at the gate.
    g.gate.release(agentId);
    g.gate.hold(agentId);
    const call2 = await g.gate.arrived(agentId);
    expect(call2.callNumber).toBe(2);
    const last = call2.messages.at(-1);
    expect(last).toEqual({ role: 'user', text: 'Message from bob: Please also read notes.md.' });
    expect(call2.messages.at(-2)).toMatchObject({ role: 'tool', name: 'fs.list' });
    g.gate.release(agentId);

    const result = await g.agents.waitForTask(agentId, taskId);
    expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: 2 });
    expect(result.injections).toEqual([
      { tick: 2, kind: 'MESSAGE', text: 'Message from bob: Please also read notes.md.' },
    ]);
  });

  it('keeps a message sent between tasks for the next task', async () => {
    const agentId = uniqueId('message-idle');
    const first = await h.agents.submit(agentId, { goal: 'first', config: configFor([DONE]) });
    await h.agents.waitForTask(agentId, first.taskId);
    await h.agents.message(agentId, 'Be brief.');
    const { taskId } = await h.agents.submit(agentId, { goal: 'second', config: configFor([DONE]) });
    const result = await h.agents.waitForTask(agentId, taskId);
    expect(result.injections).toEqual([{ tick: 1, kind: 'MESSAGE', text: 'Message from a human operator: Be brief.' }]);
  });

  it('keeps a message that reached a task too late, before a breaker suspended it, and shows it when the task resumes', async () => {
    const agentId = uniqueId('message-late');
    g.gate.hold(agentId);
    // maxTicks 1: after tick 1 the loop cap suspends the task before its next LLM call would show the message.
    const { taskId } = await g.agents.submit(agentId, {
      goal: 'list, then answer',
      config: configFor([LIST, DONE], { safety: { maxTicks: 1 } }),
    });
    await g.gate.arrived(agentId);
    await g.agents.message(agentId, 'Read notes.md too.', 'carol');
    await eventually('the message in the task history', async () => {
      const events = await historyOf(g.agents.client, taskWorkflowId(agentId, taskId));
      return eventIdOf(
        events,
        'workflowExecutionSignaled',
        (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'message',
      );
    });
    g.gate.release(agentId);

    const suspended = await g.agents.waitForTask(agentId, taskId);
    expect(suspended).toMatchObject({ outcome: 'SUSPENDED', reason: { code: 'LOOP_CAP' } });
    expect(suspended.injections.filter((i) => i.kind === 'MESSAGE')).toEqual([]);

    await g.agents.unlock(agentId, { resume: true, by: 'test' });
    const resumed = await g.agents.waitForTask(agentId, taskId, notSuspended);
    expect(resumed).toMatchObject({ outcome: 'COMPLETED', ticks: 2 });
    expect(resumed.injections.filter((i) => i.kind === 'MESSAGE')).toEqual([
      { tick: 2, kind: 'MESSAGE', text: 'Message from carol: Read notes.md too.' },
    ]);
  });
});

describe('continue-as-new', () => {
  /** A client that starts agents which continue-as-new every few events. */
  const canClient = (harness: Harness, events: number) =>
    new AgentClient({ connection: harness.connection, taskQueue: harness.taskQueue, continueAsNewAfterEvents: events });

  /** The input of the agent's current run, and its run ids. */
  async function currentRun(client: AgentClient, agentId: string) {
    const handle = client.client.workflow.getHandle(agentWorkflowId(agentId));
    const { runId } = await handle.describe();
    const events = await historyOf(client.client, agentWorkflowId(agentId), runId);
    const started = events[0]?.workflowExecutionStartedEventAttributes;
    return {
      runId,
      firstRunId: started?.firstExecutionRunId ?? '',
      input: firstPayload<AgentWorkflowInput>(started?.input),
    };
  }

  it('carries the queue, counters, tokens, budget, lock state and cancelled tasks to the new run', async () => {
    const agentId = uniqueId('can');
    const agents = canClient(g, 10);

    // 1. A halt with two tasks queued: cancelled tasks to carry.
    g.gate.hold(agentId);
    const t1 = await agents.submit(agentId, { goal: 'halted', config: configFor([DONE]) });
    await g.gate.arrived(agentId);
    await agents.submit(agentId, { goal: 'cancelled one', config: configFor([DONE]), taskId: 'task-c1' });
    await agents.submit(agentId, { goal: 'cancelled two', config: configFor([DONE]), taskId: 'task-c2' });
    await agents.halt(agentId, { by: 'ops' });
    expect(await agents.waitForTask(agentId, t1.taskId)).toMatchObject({ outcome: 'CANCELLED' });
    await agents.unlock(agentId, { by: 'ops', note: 'back to work' });

    // 2. A task that fails once, then trips the loop cap with two tasks behind it, under a budget an admin set.
    await agents.setLimits(agentId, { safety: { tokenBudget: 50_000 }, by: 'ops' });
    const config = configFor(
      [
        {
          toolCalls: [{ name: 'fs.read', args: { path: 'missing.txt' } }],
          usage: { inputTokens: 300, outputTokens: 30 },
        },
        DONE,
      ],
      {
        safety: { maxTicks: 1, tokenBudget: 50_000 },
      },
    );
    const t4 = await agents.submit(agentId, { goal: 'trips the cap', config });
    await g.gate.arrived(agentId);
    await agents.submit(agentId, { goal: 'queued low', config: configFor([DONE]), taskId: 'task-q-low', priority: 7 });
    await agents.submit(agentId, {
      goal: 'queued high',
      config: configFor([DONE]),
      taskId: 'task-q-high',
      priority: 2,
    });
    g.gate.release(agentId);
    const suspended = await agents.waitForTask(agentId, t4.taskId);
    expect(suspended).toMatchObject({
      outcome: 'SUSPENDED',
      agentState: 'SAFETY_LOCKOUT',
      reason: { code: 'LOOP_CAP' },
      tokensUsed: 330,
    });

    // 3. The agent continues as new while locked: the new run starts from the carried lock.
    const run = await eventually('a run continued from the locked state', async () => {
      const r = await currentRun(agents, agentId);
      return r.input?.carried?.agentState === 'SAFETY_LOCKOUT' ? r : undefined;
    });
    expect(run.runId).not.toBe(run.firstRunId);
    expect(run.input?.continueAsNewAfterEvents).toBe(10);
    const firstRun = await historyOf(agents.client, agentWorkflowId(agentId), run.firstRunId);
    expect(firstRun.at(-1)?.kind).toBe('workflowExecutionContinuedAsNew');

    const s = await agents.status(agentId);
    expect(s).toMatchObject({
      agentState: 'SAFETY_LOCKOUT',
      reason: suspended.reason,
      tokensUsed: 330,
      tokenBudget: 50_000,
      queue: [
        { taskId: 'task-q-high', priority: 2, goal: 'queued high' },
        { taskId: 'task-q-low', priority: 7, goal: 'queued low' },
      ],
      suspendedTask: { taskId: t4.taskId },
      counters: { consecutiveFailures: 1, window: ['failed'] },
    });
    expect(s.counters.repeat).toMatchObject({ toolName: 'fs.read', count: 1 });
    expect(s.cancelledTasks.map((c) => [c.taskId, c.goal])).toEqual([
      ['task-c1', 'cancelled one'],
      ['task-c2', 'cancelled two'],
    ]);
    expect(s.unlocks).toEqual([expect.objectContaining({ by: 'ops', note: 'back to work', from: 'STOPPED' })]);
    expect(s.tasks.map((t) => [t.taskId, t.outcome])).toEqual([
      [t1.taskId, 'CANCELLED'],
      [t4.taskId, 'SUSPENDED'],
    ]);
    expect(await refusal(agents, agentId, { goal: 'still locked', config })).toContain('SAFETY_LOCKOUT');

    // 4. The carried state works: resume finishes the suspended task, then the queue drains in order.
    await agents.unlock(agentId, { resume: true });
    expect(await agents.waitForTask(agentId, t4.taskId, notSuspended)).toMatchObject({
      outcome: 'COMPLETED',
      ticks: 2,
    });
    await agents.waitForTask(agentId, 'task-q-low');
    const end = await agents.status(agentId);
    expect(end.tasks.map((t) => t.taskId)).toEqual([t1.taskId, t4.taskId, 'task-q-high', 'task-q-low']);
  });

  it('loses no submitted task when it continues as new between tasks', async () => {
    const agentId = uniqueId('can-busy');
    const agents = canClient(h, 10);
    const config = configFor([DONE]);
    const ids = await Promise.all(
      Array.from({ length: 12 }, (_, i) => agents.submit(agentId, { goal: `goal ${i}`, config, taskId: `task-t${i}` })),
    );
    expect(ids.map((r) => r.taskId).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `task-t${i}`).sort());
    for (const { taskId } of ids)
      expect(await agents.waitForTask(agentId, taskId)).toMatchObject({ outcome: 'COMPLETED' });

    const s = await agents.status(agentId);
    expect(s.tasks.map((t) => t.taskId).sort()).toEqual(ids.map((r) => r.taskId).sort());
    expect(s.tokensUsed).toBe(12 * 15);
    const run = await currentRun(agents, agentId);
    expect(run.runId).not.toBe(run.firstRunId);
  });
});
