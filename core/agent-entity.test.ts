import { AgentEntity, newAgentData, RefusedError } from './agent-entity';
import { PermissionDeniedError } from './errors';
import type { TaskRunOutput } from './task-run';
import { parseAgentConfig, parseTaskConfig } from './config';
import { jsonBytes } from './compact';
import { LIMITS } from './contract';
import { initialCounters } from './safety-counters';
import type { LockVerdict } from './safety-rungs';
import type { TaskCheckpoint } from './types';

const config = parseAgentConfig({ safety: { tokenBudget: 1000 } }, 'scripted:x.json');
const agentOf = () => new AgentEntity(newAgentData('a1', config), (taskId) => `wf-${taskId}`);

const checkpoint: TaskCheckpoint = {
  messages: [],
  ticks: 2,
  callNumber: 2,
  tokensUsed: 50,
  toolCalls: [],
  injections: [],
  verifyAsked: false,
};

/** What a task run returns, for the task the agent is running. */
function runOutput(
  agent: AgentEntity,
  over: Partial<TaskRunOutput> & { outcome?: TaskRunOutput['result']['outcome'] } = {},
): TaskRunOutput {
  const c = agent.data.current!;
  const { outcome = 'COMPLETED', ...rest } = over;
  return {
    result: {
      agentId: 'a1',
      taskId: c.task.taskId,
      workflowId: c.workflowId,
      outcome,
      agentState: 'EXECUTING',
      ticks: 2,
      tokensUsed: 50,
      toolCalls: [],
      injections: [],
    },
    counters: initialCounters(),
    runTokens: 50,
    ...rest,
  };
}

const loopCap: LockVerdict = {
  agentState: 'SAFETY_LOCKOUT',
  reason: { code: 'LOOP_CAP', message: 'loop cap of 2 ticks reached' },
};

/** Start a task and suspend it with `lock`. */
function suspendOne(agent: AgentEntity, lock = loopCap): string {
  const { taskId } = agent.submit({ goal: 'loops' });
  agent.startNext();
  agent.finish(runOutput(agent, { outcome: 'SUSPENDED', lock, checkpoint }));
  return taskId;
}

describe('AgentEntity: the priority inbox', () => {
  it('runs lower priorities first and first come first served within a priority, numbering task ids', () => {
    const agent = agentOf();
    const ids = [
      agent.submit({ goal: 'a' }),
      agent.submit({ goal: 'b', priority: 2 }),
      agent.submit({ goal: 'c' }),
      agent.submit({ goal: 'd', priority: 2 }),
    ].map((s) => s.taskId);
    expect(ids).toEqual(['task-1', 'task-2', 'task-3', 'task-4']);
    const order: string[] = [];
    while (agent.hasWork()) {
      order.push(agent.startNext()!.task.goal);
      agent.finish(runOutput(agent));
    }
    expect(order).toEqual(['b', 'd', 'a', 'c']);
    expect(agent.data.agentState).toBe('WAITING_FOR_EVENT');
    expect(agent.data.tokensUsed).toBe(200);
  });

  it('refuses an empty goal, a used task id and a priority outside 1..9, and changes nothing', () => {
    const agent = agentOf();
    agent.submit({ goal: 'a', taskId: 'task-mine' });
    const before = JSON.stringify(agent.data);
    expect(() => agent.parseSubmit({ goal: ' ' })).toThrow(/the task needs a non-empty goal/);
    expect(() => agent.submit({ goal: 'b', taskId: 'task-mine' })).toThrow(
      'task id task-mine is already used by agent a1',
    );
    expect(() => agent.submit({ goal: 'b', priority: 0 })).toThrow('0 is reserved for SYSTEM_HALT');
    expect(JSON.stringify(agent.data)).toBe(before);
  });
});

describe('AgentEntity: a submit delivered again', () => {
  it('answers the same update id with its first answer, once, even after its task ran, after a lock and after continue-as-new', () => {
    const agent = agentOf();
    const first = agent.submit({ goal: 'once', taskId: 'task-x' }, 'update-1');
    agent.startNext();
    agent.finish(runOutput(agent, { outcome: 'SUSPENDED', lock: loopCap, checkpoint }));
    // The continued run carries the answers; the agent is locked and the task id used, yet the same update is answered.
    const next = new AgentEntity(structuredClone(agent.data), (taskId) => `wf-${taskId}`);
    expect(() => next.validateSubmit({ goal: 'once', taskId: 'task-x' }, 'update-1')).not.toThrow();
    expect(next.submit({ goal: 'once', taskId: 'task-x' }, 'update-1')).toEqual(first);
    expect(next.data.inbox.items).toEqual([]);
    // Another update with the same task id is a new request, refused as before.
    expect(() => next.validateSubmit({ goal: 'once', taskId: 'task-x' }, 'update-2')).toThrow(RefusedError);
  });

  it('remembers a bounded number of answers', () => {
    const agent = agentOf();
    for (let i = 0; i < LIMITS.rememberedSubmits + 5; i++) agent.submit({ goal: `g${i}` }, `u${i}`);
    expect(agent.data.submits).toHaveLength(LIMITS.rememberedSubmits);
    expect(agent.answered('u0')).toBeUndefined();
    expect(agent.answered(`u${LIMITS.rememberedSubmits + 4}`)).toMatchObject({
      taskId: `task-${LIMITS.rememberedSubmits + 5}`,
    });
  });
});

describe('AgentEntity: a new agent', () => {
  it('holds nothing until a submit is accepted', () => {
    const agent = new AgentEntity(newAgentData('a1'), (taskId) => `wf-${taskId}`);
    expect(agent.empty).toBe(true);
    agent.submit({ goal: 'first', config });
    expect(agent.empty).toBe(false);
  });

  it('refuses a submit that came after its acceptBy, when its client had stopped waiting, and changes nothing', () => {
    const agent = agentOf();
    const before = JSON.stringify(agent.data);
    expect(() => agent.validateSubmit({ goal: 'late', acceptBy: 1_000 }, 'u1', 1_001)).toThrow(
      /after 1970-01-01T00:00:01.000Z, when its client stopped waiting for a worker: it is not run/,
    );
    expect(() => agent.validateSubmit({ goal: 'in time', acceptBy: 1_000 }, 'u2', 1_000)).not.toThrow();
    expect(JSON.stringify(agent.data)).toBe(before);
  });
});

describe('AgentEntity: lockout', () => {
  it('refuses tasks while locked, naming the state, the reason and the way out', () => {
    const agent = agentOf();
    suspendOne(agent);
    expect(agent.data.agentState).toBe('SAFETY_LOCKOUT');
    expect(() => agent.submit({ goal: 'next' })).toThrow(
      'agent a1 is SAFETY_LOCKOUT (LOOP_CAP: loop cap of 2 ticks reached) and refuses tasks until a human unlocks it: starry unlock a1',
    );
  });

  it('blocks the inbox behind a suspended task until unlock decides it', () => {
    const agent = agentOf();
    agent.submit({ goal: 'queued first' });
    agent.startNext();
    agent.submit({ goal: 'queued behind' });
    agent.finish(runOutput(agent, { outcome: 'SUSPENDED', lock: loopCap, checkpoint }));
    expect(agent.hasWork()).toBe(false);
  });

  it('unlock with resume runs the suspended task again from its checkpoint, before the queue', () => {
    const agent = agentOf();
    const taskId = suspendOne(agent);
    agent.data.counters = { consecutiveFailures: 3, repeat: null, window: ['failed', 'failed', 'failed'] };
    const r = agent.unlock({ resume: true, by: 'alice', note: 'looked fine' });
    expect(r).toMatchObject({ unlocked: true, agentState: 'WAITING_FOR_EVENT' });
    expect(r.message).toContain(`task ${taskId} resumes with a fresh tick allowance`);
    expect(agent.data.counters).toEqual(initialCounters());
    expect(agent.data.unlocks).toEqual([
      { by: 'alice', note: 'looked fine', from: 'SAFETY_LOCKOUT', reason: loopCap.reason, resume: true, addTokens: 0 },
    ]);
    agent.submit({ goal: 'queued after the unlock', priority: 1 });
    const next = agent.startNext()!;
    expect(next.task.taskId).toBe(taskId);
    expect(next.checkpoint).toEqual(checkpoint);
    expect(agent.data.suspended).toBeUndefined();
  });

  it('unlock without resume ends the suspended task ABORTED and keeps its record', () => {
    const agent = agentOf();
    const taskId = suspendOne(agent);
    const r = agent.unlock();
    expect(r.message).toContain(`task ${taskId} ended ABORTED`);
    expect(agent.data.suspended).toBeUndefined();
    expect(agent.data.tasks.find((t) => t.taskId === taskId)).toMatchObject({ outcome: 'ABORTED', ticks: 2 });
  });

  it('says unlock of an agent that is not locked is a no-op and records nothing', () => {
    const agent = agentOf();
    expect(agent.unlock({ resume: true })).toEqual({
      unlocked: false,
      agentState: 'WAITING_FOR_EVENT',
      message: 'agent a1 is not locked (WAITING_FOR_EVENT): nothing to unlock',
    });
    expect(agent.data.unlocks).toEqual([]);
  });

  it('adds tokens to the budget of later tasks, even those submitted with their own budget, until an admin sets it', () => {
    const agent = agentOf();
    suspendOne(agent, {
      agentState: 'STOPPED',
      reason: { code: 'BUDGET_EXHAUSTED', message: 'budget spent' },
    });
    agent.unlock({ addTokens: 500 });
    expect(agent.data.config?.safety.tokenBudget).toBe(1500);
    const own = (safety: Record<string, number>) =>
      agent.parseSubmit({ goal: 'own config', config: { guide: 'safety', llm: 'scripted:y.json', safety } }).config!;
    agent.submit({ goal: 'no budget of its own', config: own({}) });
    expect(agent.startNext()?.config.safety.tokenBudget).toBe(1500);
    expect(agent.data.config).toMatchObject({ guide: 'safety', safety: { tokenBudget: 1500 } });
    agent.finish(runOutput(agent));
    // Its own budget counts before the tokens a human added: 1000 is the agent's, 1001 is more.
    expect(() => agent.validateSubmit({ goal: 'more', config: own({ tokenBudget: 1001 }) })).toThrow(
      /safety\.tokenBudget: 1001 is looser than agent a1's limit 1000/,
    );
    agent.submit({ goal: 'its own budget', config: own({ tokenBudget: 1000 }) });
    expect(agent.startNext()?.config.safety.tokenBudget).toBe(1500);
    agent.finish(runOutput(agent));
    agent.setLimits({ safety: { tokenBudget: 1200 } });
    agent.submit({ goal: 'after the admin set it', config: own({ tokenBudget: 1200 }) });
    expect(agent.startNext()?.config.safety.tokenBudget).toBe(1200);
  });

  it('warns that a budget stop unlocked without tokens will stop again', () => {
    const agent = agentOf();
    suspendOne(agent, {
      agentState: 'STOPPED',
      reason: { code: 'BUDGET_EXHAUSTED', message: 'budget spent' },
    });
    agent.data.tokensUsed = 1000;
    expect(agent.unlock().message).toContain('the next LLM call will stop again; pass --add-tokens N');
  });
});

describe('AgentEntity: SYSTEM_HALT', () => {
  it('stops at once, clears the inbox into cancelledTasks and names the running task to forward to', () => {
    const agent = agentOf();
    agent.submit({ goal: 'running' });
    agent.startNext();
    agent.submit({ goal: 'queued 1' });
    agent.submit({ goal: 'queued 2', priority: 1 });
    const h = agent.halt({ by: 'bob', note: 'runaway' });
    expect(h).toEqual({ forwardTo: 'wf-task-1', cleared: 2 });
    expect(agent.data).toMatchObject({
      agentState: 'STOPPED',
      reason: { code: 'SYSTEM_HALT', message: 'SYSTEM_HALT by bob: runaway' },
    });
    expect(agent.data.inbox.items).toEqual([]);
    expect(agent.data.cancelledTasks.map((t) => [t.taskId, t.goal])).toEqual([
      ['task-3', 'queued 2'],
      ['task-2', 'queued 1'],
    ]);
    // The halted task's own lock does not overwrite SYSTEM_HALT.
    agent.finish(runOutput(agent, { outcome: 'CANCELLED', lock: loopCap }));
    expect(agent.data.reason?.code).toBe('SYSTEM_HALT');
  });

  it('keeps a locked agent’s first reason and records the halt beside it, until an unlock clears both', () => {
    const agent = agentOf();
    suspendOne(agent);
    const h = agent.halt({ by: 'ops', note: 'stop everything' });
    expect(h).toEqual({ forwardTo: undefined, cleared: 0 });
    expect(agent.data).toMatchObject({
      agentState: 'SAFETY_LOCKOUT',
      reason: loopCap.reason,
      halt: { by: 'ops', note: 'stop everything' },
    });
    expect(agent.status()).toMatchObject({ reason: loopCap.reason, halt: { by: 'ops', note: 'stop everything' } });
    expect(agent.details()).toMatch(/SAFETY_LOCKOUT \(LOOP_CAP\)[^]*SYSTEM_HALT by ops: stop everything while locked/);
    // A second halt of a halted agent keeps the first halt's reason as well.
    const stopped = agentOf();
    stopped.halt({ by: 'first' });
    stopped.halt({ by: 'second' });
    expect(stopped.data).toMatchObject({
      agentState: 'STOPPED',
      reason: { message: 'SYSTEM_HALT by first' },
      halt: { by: 'second' },
    });
    agent.unlock({ resume: true });
    expect(agent.data.halt).toBeUndefined();
    expect(agent.status().halt).toBeUndefined();
  });
});

describe('AgentEntity: what it reports', () => {
  it('reports the running task’s tick, and after it the tick its last task stopped at, not 0', () => {
    const agent = agentOf();
    expect(agent.reported()).toEqual({
      agentId: 'a1',
      agentState: 'WAITING_FOR_EVENT',
      tick: 0,
      tokensUsed: 0,
      lockReason: null,
    });
    agent.submit({ goal: 'loops' });
    agent.startNext();
    agent.progress({ taskId: 'task-1', tick: 3, runTokens: 40, counters: initialCounters() });
    expect(agent.reported()).toMatchObject({ agentState: 'EXECUTING', tick: 3, tokensUsed: 40 });
    agent.finish(
      runOutput(agent, {
        outcome: 'SUSPENDED',
        lock: loopCap,
        checkpoint,
        result: { ...runOutput(agent).result, outcome: 'SUSPENDED', ticks: 4 },
      }),
    );
    expect(agent.reported()).toEqual({
      agentId: 'a1',
      agentState: 'SAFETY_LOCKOUT',
      tick: 4,
      tokensUsed: 50,
      lockReason: 'LOOP_CAP',
    });
  });
});

describe('AgentEntity: started without a config', () => {
  it('takes its first task’s config, and refuses a first task without one, saying what to send', () => {
    const agent = new AgentEntity(newAgentData('a1'), (taskId) => `wf-${taskId}`);
    expect(() => agent.submit({ goal: 'no config' })).toThrow(
      'agent a1 has no config yet: submit its first task with one (it names the LLM)',
    );
    expect(() => agent.parseSubmit({ goal: 'g', config: { safety: { maxTicks: 3 } } })).toThrow(/no LLM given/);
    expect(agent.status()).toMatchObject({ guide: '', llm: '', tokenBudget: 0 });
    agent.submit(agent.parseSubmit({ goal: 'first', config }));
    expect(agent.data.config).toEqual(config);
    expect(agent.status()).toMatchObject({ guide: 'pain', llm: 'scripted:x.json', tokenBudget: 1000 });
    expect(agent.startNext()).toMatchObject({ task: { taskId: 'task-1' }, config });
  });

  it('parses a config the edge already parsed to itself', () => {
    const parsed = agentOf().parseSubmit(JSON.parse(JSON.stringify({ goal: 'g', config })));
    expect(parsed.config).toEqual(config);
  });
});

describe('AgentEntity: only an admin loosens limits', () => {
  const task = (safety: Record<string, number>) =>
    agentOf().parseSubmit({ goal: 'g', config: { llm: 'scripted:x.json', safety } }).config!;

  it('refuses a task config that raises the budget, naming the field, and queues nothing', () => {
    const agent = agentOf();
    const submit = { goal: 'more', config: task({ tokenBudget: 1_000_000_000 }) };
    expect(() => agent.validateSubmit(submit)).toThrow(PermissionDeniedError);
    expect(() => agent.submit(submit)).toThrow(
      /^raising tokenBudget needs admin: a task's config may only tighten its agent's limits\.\n {2}- safety\.tokenBudget: 1000000000 is looser than agent a1's limit 1000/,
    );
    expect(() => agent.submit(submit)).toThrow('starry limits a1 --token-budget 1000000000');
    expect(agent.data.inbox.items).toEqual([]);
  });

  it('names every looser field, a smaller cascade window among them', () => {
    const agent = agentOf();
    const submit = {
      goal: 'g',
      config: task({ maxTicks: 51, cascadeWindow: 9, cascadeErrors: 8, repeatThreshold: 2 }),
    };
    expect(() => agent.submit(submit)).toThrow(/^raising maxTicks, lowering cascadeWindow needs admin/);
  });

  it('runs a tightening task with its limits, and keeps the agent’s own', () => {
    const agent = agentOf();
    agent.submit({ goal: 'tight', config: task({ tokenBudget: 400, maxTicks: 5, cascadeWindow: 20 }) });
    const run = agent.startNext()!;
    expect(run.config.safety).toMatchObject({ tokenBudget: 400, maxTicks: 5, cascadeWindow: 20 });
    expect(agent.data.config!.safety).toEqual(config.safety);
    expect(agent.status()).toMatchObject({ tokenBudget: 1000, limits: config.safety });
  });

  it('gives a task whose config says nothing of safety the agent’s limits, not the defaults', () => {
    const agent = agentOf();
    const own = task({});
    expect(own.safety).toEqual({});
    agent.submit({ goal: 'plain', config: own });
    expect(agent.startNext()!.config.safety).toEqual(config.safety);
  });

  it('runs a queued task with the tighter of its limits and the agent’s, which an admin may have changed since', () => {
    const agent = agentOf();
    agent.submit({ goal: 'queued', config: task({ tokenBudget: 900 }) });
    agent.submit({ goal: 'inherits' });
    agent.setLimits({ safety: { tokenBudget: 800, maxTicks: 10 }, by: 'alice' });
    expect(agent.startNext()!.config.safety).toMatchObject({ tokenBudget: 800, maxTicks: 10 });
    agent.finish(runOutput(agent));
    agent.setLimits({ safety: { tokenBudget: 5000 }, by: 'alice' });
    expect(agent.startNext()!.config.safety).toMatchObject({ tokenBudget: 5000, maxTicks: 10 });
  });

  it('lets the first task of a new agent set its limits, the defaults filling in the rest', () => {
    const agent = new AgentEntity(newAgentData('a1'), (taskId) => `wf-${taskId}`);
    agent.submit({ goal: 'first', config: task({ tokenBudget: 1e9 }) });
    expect(agent.data.config!.safety).toMatchObject({ tokenBudget: 1e9, maxTicks: 50 });
    expect(() => agent.validateSubmit({ goal: 'g', config: task({ cascadeErrors: 20 }) })).toThrow(
      PermissionDeniedError,
    );
    const fresh = new AgentEntity(newAgentData('a2'), (taskId) => `wf-${taskId}`);
    expect(() => fresh.submit({ goal: 'g', config: task({ cascadeErrors: 20 }) })).toThrow(
      /safety\.cascadeErrors: cascadeErrors must be <= cascadeWindow/,
    );
  });

  it('records who changed the limits and what from, bounded, and refuses bad changes', () => {
    const agent = agentOf();
    const r = agent.setLimits({ safety: { tokenBudget: 5000, cascadeWindow: 10 }, by: 'alice', note: 'migration' });
    expect(r).toMatchObject({ changed: ['tokenBudget'], limits: { tokenBudget: 5000 } });
    expect(r.message).toBe("agent a1's limits changed: tokenBudget 1000 → 5000");
    expect(agent.status().limitChanges).toEqual([
      { by: 'alice', note: 'migration', from: { tokenBudget: 1000 }, to: { tokenBudget: 5000 } },
    ]);
    expect(() => agent.setLimits({ safety: { cascadeErrors: 11 } })).toThrow(/cascadeErrors must be <= cascadeWindow/);
    expect(() => agent.setLimits({ safety: { tokenBudget: 2e9 } })).toThrow(
      /safety\.tokenBudget: must be <= 1000000000/,
    );
    for (let i = 0; i < LIMITS.limitChanges + 3; i++) agent.setLimits({ safety: { maxTicks: 10 + i } });
    expect(agent.data.limitChanges).toHaveLength(LIMITS.limitChanges);
    const none = new AgentEntity(newAgentData('a2'), (taskId) => `wf-${taskId}`);
    expect(() => none.setLimits({ safety: { maxTicks: 5 } })).toThrow(
      /agent a2 has no limits yet: its first task sets them/,
    );
  });
});

describe('AgentEntity: human messages', () => {
  it('forwards to the running task, and keeps for the next task when none runs', () => {
    const agent = agentOf();
    expect(agent.message({ text: 'idle' })).toEqual({});
    agent.submit({ goal: 'x' });
    agent.startNext();
    expect(agent.message({ text: 'busy' })).toEqual({ forwardTo: 'wf-task-1' });
    expect(agent.takePendingMessages()).toEqual([{ text: 'idle' }]);
  });

  it('keeps what a task received too late and what could not be forwarded, for the next run', () => {
    const agent = agentOf();
    agent.message({ text: 'waiting already' });
    agent.submit({ goal: 'x' });
    agent.startNext();
    agent.takePendingMessages(); // given to the task at its start
    expect(agent.message({ text: 'shown' })).toEqual({ forwardTo: 'wf-task-1' });
    agent.finish(runOutput(agent, { undelivered: [{ text: 'too late', by: 'carol' }] }));
    agent.keepMessage({ text: 'task had closed' });
    expect(agent.takePendingMessages()).toEqual([{ text: 'too late', by: 'carol' }, { text: 'task had closed' }]);
  });
  it('refuses messages beyond what a run or an idle agent keeps, with what to do', () => {
    const agent = agentOf();
    for (let i = 0; i < LIMITS.pendingMessages; i++) agent.message({ text: `idle ${i}` });
    expect(() => agent.message({ text: 'one more' })).toThrow(
      /already holds 20 messages for its next task, the most it keeps: submit a task first/,
    );
    agent.submit({ goal: 'x' });
    agent.startNext();
    agent.takePendingMessages();
    for (let i = 0; i < LIMITS.messagesPerRun; i++) agent.message({ text: `busy ${i}` });
    expect(() => agent.validateMessage()).toThrow(RefusedError);
    expect(() => agent.message({ text: 'one more' })).toThrow(
      /has already received 50 messages, the most one run takes/,
    );
  });
});

describe('AgentEntity: what it carries', () => {
  it('refuses a submit that would take its state past the byte limit, saying what to do', () => {
    const agent = agentOf();
    const goal = 'g'.repeat(LIMITS.goalChars);
    let refused: Error | undefined;
    for (let i = 0; i < LIMITS.queuedTasks && !refused; i++) {
      try {
        agent.submit({
          goal,
          config: parseTaskConfig({ workspace: ['a', 'b', 'c'].map((r) => r.repeat(3000)) }, 'scripted:x.json'),
        });
      } catch (err) {
        refused = err as Error;
      }
    }
    expect(refused).toBeInstanceOf(RefusedError);
    expect(refused?.message).toMatch(
      /would carry \d+ KB of queued, cancelled and recent tasks, more than the 1500 KB it keeps .*submit again when some have run/,
    );
    expect(jsonBytes(agent.data)).toBeLessThanOrEqual(LIMITS.agentStateBytes);
  });
});

describe('AgentEntity: the contract at its door', () => {
  it('checks a raw submit and fills in a partial config with the agent llm, keeping the limits it gives', () => {
    const parsed = agentOf().parseSubmit({ goal: 'g', priority: 2, config: { safety: { maxTicks: 3 } } });
    expect(parsed.config?.llm).toEqual({ provider: 'scripted', file: 'x.json' });
    expect(parsed.config?.safety).toEqual({ maxTicks: 3 });
    expect(() => agentOf().parseSubmit({ goal: 'g', config: { guide: 'No pe' } })).toThrow(/guide: must be a guide id/);
    // A well-formed id passes here: whether the worker has that guide is its own check, at submit.
    expect(agentOf().parseSubmit({ goal: 'g', config: { guide: 'careful' } }).config?.guide).toBe('careful');
    expect(() => agentOf().parseSubmit({ goal: 'g', priority: 0 })).toThrow(/priority: .*reserved for SYSTEM_HALT/);
  });

  it("carries a submit's traceparent to the task's run, and refuses a malformed one", () => {
    const agent = agentOf();
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    agent.submit(agent.parseSubmit({ goal: 'g', traceparent }));
    expect(agent.startNext()?.task.traceparent).toBe(traceparent);
    expect(() => agent.parseSubmit({ goal: 'g', traceparent: traceparent.toUpperCase() })).toThrow(
      /traceparent: traceparent must be a W3C trace context/,
    );
  });

  it('numbers its own tasks around ids a caller chose', () => {
    const agent = agentOf();
    agent.submit({ goal: 'mine', taskId: 'task-2' });
    expect(agent.submit({ goal: 'a' }).taskId).toBe('task-1');
    expect(agent.submit({ goal: 'b' }).taskId).toBe('task-3');
  });

  it('refuses a submit when the queue is full, saying so', () => {
    const agent = agentOf();
    for (let i = 0; i < 100; i++) agent.submit({ goal: `g${i}` });
    expect(() => agent.submit({ goal: 'one more' })).toThrow(/already has 100 tasks queued/);
  });

  it("keeps a cancelled task's own config so it can be resubmitted as it was", () => {
    const agent = agentOf();
    const own = parseTaskConfig({ guide: 'neutral' }, 'scripted:y.json');
    agent.submit({ goal: 'with its config', priority: 3, config: own });
    agent.halt({ by: 'ops' });
    expect(agent.data.cancelledTasks).toEqual([
      expect.objectContaining({ taskId: 'task-1', goal: 'with its config', priority: 3, config: own }),
    ]);
  });
});

describe('AgentEntity: calls that wait for a human', () => {
  const NOW = Date.parse('2026-01-01T00:01:00.000Z');
  const waiting = (taskId: string, callId = 't1.0') => ({
    callId,
    taskId,
    workflowId: `wf-${taskId}`,
    tool: 'fs.write',
    args: { path: 'a.md', content: 'x' },
    tick: 1,
    rule: 'fs.write',
    from: 'config' as const,
    askedAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-02T00:00:00.000Z',
  });
  const running = () => {
    const agent = agentOf();
    const { taskId } = agent.submit({ goal: 'write' });
    agent.startNext();
    return { agent, taskId };
  };

  it('is WAITING_FOR_APPROVAL while its task reports waiting calls, lists them, and says which are new', () => {
    const { agent, taskId } = running();
    expect(agent.approvalsReported({ taskId, waiting: [waiting(taskId)] })).toHaveLength(1);
    expect(agent.data.agentState).toBe('WAITING_FOR_APPROVAL');
    expect(agent.status().approvals).toEqual([waiting(taskId)]);
    expect(agent.details()).toContain('`starry approve a1 t1.0`');
    // The same list again (a re-sent report) alerts nobody twice.
    expect(agent.approvalsReported({ taskId, waiting: [waiting(taskId)] })).toEqual([]);
    expect(agent.approvalsReported({ taskId, waiting: [] })).toEqual([]);
    expect(agent.data.agentState).toBe('EXECUTING');
  });

  it('takes one decision per call, recorded with who and when, and refuses the second by name (409)', () => {
    const { agent, taskId } = running();
    agent.approvalsReported({ taskId, waiting: [waiting(taskId)] });
    const first = agent.decide({ callId: 't1.0', decision: 'deny', reason: 'no', by: 'alice' }, '2026-01-01T00:05:00Z');
    expect(first).toEqual({
      forwardTo: `wf-${taskId}`,
      decision: { callId: 't1.0', decision: 'deny', reason: 'no', by: 'alice', at: '2026-01-01T00:05:00Z' },
    });
    expect(agent.data.agentState).toBe('EXECUTING');
    expect(() => agent.decide({ callId: 't1.0', decision: 'approve', by: 'bob' }, 'later')).toThrow(
      expect.objectContaining({
        type: 'Refused',
        message: expect.stringMatching(
          /t1\.0 of agent a1 was decided already: denied by alice at 2026-01-01T00:05:00Z/,
        ),
      }),
    );
    // A report the task sent before the decision reached it does not list the call again.
    agent.approvalsReported({ taskId, waiting: [waiting(taskId)] });
    expect(agent.data.approvals).toBeUndefined();
  });

  it('refuses an unknown call (404) and edited args that do not fit the tool (400)', () => {
    const { agent, taskId } = running();
    agent.approvalsReported({ taskId, waiting: [waiting(taskId)] });
    expect(() => agent.validateDecision({ callId: 't9.9', decision: 'approve' }, NOW)).toThrow(
      expect.objectContaining({ type: 'NotFound', message: expect.stringMatching(/no call t9\.9.*waiting: t1\.0/) }),
    );
    expect(() => agent.validateDecision({ callId: 't1.0', decision: 'approve', args: { path: 7 } }, NOW)).toThrow(
      expect.objectContaining({ type: 'InvalidArgument', message: expect.stringMatching(/do not fit fs\.write/) }),
    );
  });

  it('refuses a decision that comes after the call expired: its task counts it as denied', () => {
    const { agent, taskId } = running();
    agent.approvalsReported({ taskId, waiting: [waiting(taskId)] });
    expect(() => agent.decide({ callId: 't1.0', decision: 'approve' }, '2026-01-02T00:00:00.000Z')).toThrow(
      expect.objectContaining({
        type: 'Refused',
        message: 'call t1.0 of agent a1 expired at 2026-01-02T00:00:00.000Z without a decision: it counts as denied',
      }),
    );
  });

  it('forgets the waiting calls when the task ends or is halted', () => {
    const { agent, taskId } = running();
    agent.approvalsReported({ taskId, waiting: [waiting(taskId)] });
    agent.halt({ by: 'carol' });
    expect(agent.data.approvals).toBeUndefined();
    expect(agent.data.agentState).toBe('STOPPED');
    const other = running();
    other.agent.approvalsReported({ taskId: other.taskId, waiting: [waiting(other.taskId)] });
    other.agent.finish(runOutput(other.agent));
    expect(other.agent.data).toMatchObject({ agentState: 'WAITING_FOR_EVENT', approvals: undefined });
  });
});

describe('AgentEntity: approval rules are the agent’s', () => {
  const withRules = (approval: object) => parseTaskConfig({ tools: { approval } }, 'scripted:x.json');

  it('runs a task with its agent’s rules and those it adds, and keeps the agent’s after it', () => {
    const agent = new AgentEntity(
      newAgentData('a1', parseAgentConfig({ tools: { approval: { ask: ['shell.run'] } } }, 'scripted:x.json')),
      (t) => `wf-${t}`,
    );
    agent.submit({ goal: 'adds a rule', config: withRules({ ask: ['fs.write'], timeoutMs: 5000 }) });
    expect(agent.startNext()?.config.tools.approval).toEqual({
      ask: ['shell.run', 'fs.write'],
      deny: [],
      timeoutMs: 5000,
    });
    agent.finish(runOutput(agent));
    // A task whose config has no rules (or other rules) cannot remove the agent's.
    agent.submit({ goal: 'no rules', config: parseTaskConfig({}, 'scripted:x.json') });
    expect(agent.startNext()?.config.tools.approval).toEqual({ ask: ['shell.run'], deny: [], timeoutMs: 86_400_000 });
    expect(agent.data.config?.tools.approval?.ask).toEqual(['shell.run']);
  });

  it('has no rules a later task’s config could leave behind', () => {
    const agent = agentOf();
    agent.submit({ goal: 'adds a rule', config: withRules({ deny: ['http.get'] }) });
    expect(agent.startNext()?.config.tools.approval?.deny).toEqual(['http.get']);
    agent.finish(runOutput(agent));
    agent.submit({ goal: 'plain', config: parseTaskConfig({}, 'scripted:x.json') });
    expect(agent.startNext()?.config.tools.approval).toBeUndefined();
  });
});

describe('AgentEntity: an admin replaces the approval rules', () => {
  it('is the one way to take a rule away, recorded with who did it, and the next task runs with the new rules', () => {
    const agent = new AgentEntity(
      newAgentData(
        'a1',
        parseAgentConfig({ tools: { approval: { ask: ['shell.run', 'fs.write'] } } }, 'scripted:x.json'),
      ),
      (t) => `wf-${t}`,
    );
    const r = agent.setLimits({ safety: {}, approval: { ask: ['fs.write'], deny: [], timeoutMs: 60_000 }, by: 'root' });
    expect(r).toMatchObject({
      changed: ['approval'],
      approval: { ask: ['fs.write'] },
      message: "agent a1's limits changed: approval rules ask [shell.run, fs.write] deny [] → ask [fs.write] deny []",
    });
    expect(agent.data.limitChanges?.at(-1)).toMatchObject({
      by: 'root',
      approval: { from: { ask: ['shell.run', 'fs.write'] }, to: { ask: ['fs.write'] } },
    });
    agent.submit({ goal: 'no rules of its own', config: parseTaskConfig({}, 'scripted:x.json') });
    expect(agent.startNext()?.config.tools.approval?.ask).toEqual(['fs.write']);
    agent.finish(runOutput(agent));
    // Rules that ask and deny nothing are none.
    agent.setLimits({ safety: {}, approval: { ask: [], deny: [], timeoutMs: 60_000 }, by: 'root' });
    expect(agent.status().approvalRules).toBeUndefined();
  });
});

describe('AgentEntity: cached tokens and cost', () => {
  it('adds each run’s cached input tokens and cost to the agent’s, the running task’s included in its status', () => {
    const agent = agentOf();
    agent.submit({ goal: 'one' });
    agent.submit({ goal: 'two' });
    agent.startNext();
    agent.progress({
      taskId: 'task-1',
      tick: 10,
      runTokens: 40,
      runCachedInputTokens: 16,
      runCostUsd: 0.0012,
      counters: initialCounters(),
    });
    expect(agent.status()).toMatchObject({
      cachedInputTokens: 16,
      costUsd: 0.0012,
      currentTask: { runCostUsd: 0.0012 },
    });
    agent.finish(runOutput(agent, { runCachedInputTokens: 20, runCostUsd: 0.0015 }));
    agent.startNext();
    agent.finish(runOutput(agent, { runCachedInputTokens: 5, runCostUsd: 0.0001 }));
    expect(agent.status()).toMatchObject({ tokensUsed: 100, cachedInputTokens: 25, costUsd: 0.0016 });
    // Carried by continue-as-new: the agent's data is what it carries.
    const again = new AgentEntity(JSON.parse(JSON.stringify(agent.data)), (taskId) => `wf-${taskId}`);
    expect(again.status()).toMatchObject({ cachedInputTokens: 25, costUsd: 0.0016 });
  });

  it('shows no cost while no task had a price, and its cost budget when it has one', () => {
    const agent = agentOf();
    expect(agent.status()).not.toHaveProperty('costUsd');
    const costly = new AgentEntity(
      newAgentData('a2', parseAgentConfig({ safety: { costBudgetUsd: 2 } }, 'scripted:x.json')),
      (taskId) => `wf-${taskId}`,
    );
    expect(costly.status()).toMatchObject({ costBudgetUsd: 2, limits: { costBudgetUsd: 2 } });
  });

  it('refuses a task that would raise the cost budget, and tells how to raise it after a stop', () => {
    const costly = new AgentEntity(
      newAgentData('a2', parseAgentConfig({ safety: { costBudgetUsd: 2 } }, 'scripted:x.json')),
      (taskId) => `wf-${taskId}`,
    );
    expect(() =>
      costly.submit({ goal: 'more', config: parseTaskConfig({ safety: { costBudgetUsd: 3 } }, 'scripted:x.json') }),
    ).toThrow(PermissionDeniedError);
    costly.submit({ goal: 'spend' });
    costly.startNext();
    costly.finish(
      runOutput(costly, {
        outcome: 'SUSPENDED',
        runCostUsd: 2,
        lock: { agentState: 'STOPPED', reason: { code: 'COST_BUDGET_EXHAUSTED', message: 'spent' } },
        checkpoint,
      }),
    );
    expect(costly.data.agentState).toBe('STOPPED');
    expect(costly.unlock({}).message).toContain('raise it first with starry limits a2 --cost-budget-usd N');
  });
});
