/**
 * Nothing a caller sends can wedge an agent. Every update and signal of a live agent workflow gets a
 * corpus of malformed payloads sent raw (bypassing AgentClient's own checks, as another SDK or the Web
 * UI's "Send a Signal" would); updates must refuse each with a typed InvalidArgument failure, signals
 * must drop it; afterwards the agent still answers, runs its next task and halts. A bug inside a task
 * workflow fails that task (Temporal would otherwise retry the workflow task forever) and pauses the
 * agent for a human, with an alert.
 */
import { WithStartWorkflowOperation, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  agentWorkflowId,
  haltSignal,
  messageSignal,
  messageUpdate,
  stopSignal,
  submitTaskUpdate,
  taskProgressSignal,
  unlockSignal,
  unlockUpdate,
} from '../../workflows/messages';
import { AgentClient, NotFoundError } from '../../client/agent-client';
import { LIMITS } from '../../core/contract';
import { jsonBytes } from '../../core/compact';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { eventually } from '../../dev/poll';
import { activityRunning, llmInputs, resolveLlmInput, settledHistory } from '../helpers/workflow-history';
import { expectWarnings, seenWarnings } from '../helpers/expected-logs';

jest.setTimeout(180_000);

const IGNORED = /^(ignored a .* signal|refused a .* signal|SYSTEM_HALT with an invalid payload)/;
expectWarnings(IGNORED, /^Workflow failed|^Activity failed|^could not signal the running task/);

const alerts: string[] = [];
let h: Harness;
beforeAll(async () => {
  // The alert of the paused agent below is expected: kept, not printed.
  h = await startHarness({ name: 'bad-payloads', activities: { alerts: { log: (line) => alerts.push(line) } } });
});
afterAll(async () => {
  await h?.stop();
});

const DONE = { text: 'Done.', usage: { inputTokens: 10, outputTokens: 5 } };
const config = () => scriptedConfig(writeScript([DONE]), makeWorkspace());

const huge = 'x'.repeat(1_000_000);
/** Shapes no handler accepts, whatever it expects. */
const common: [string, unknown][] = [
  ['null', null],
  ['a number', 42],
  ['a string', 'halt please'],
  ['an array', [1, 2, 3]],
];
/** Per handler: payloads that are wrong in its own terms. */
const corpus: Record<string, [string, unknown][]> = {
  submitTask: [
    ...common,
    ['no goal', { priority: 3 }],
    ['a goal of the wrong type', { goal: 7 }],
    ['an empty goal', { goal: '' }],
    ['a 1 MB goal', { goal: huge }],
    ['a negative priority', { goal: 'g', priority: -1 }],
    ['a fractional priority', { goal: 'g', priority: 1.5 }],
    ['an unknown field', { goal: 'g', shell: 'sh' }],
    ['a partial config with a bad number', { goal: 'g', config: { safety: { maxTicks: -5 } } }],
    ['a malformed guide id', { goal: 'g', config: { guide: 'Zen Master' } }],
    ['a config of the wrong type', { goal: 'g', config: 'yes' }],
    ['a task id with a path', { goal: 'g', taskId: '../../etc/passwd' }],
  ],
  'admin:unlock': [
    ['a number', 42],
    ['a string', 'unlock'],
    ['an array', [1]],
    ['negative tokens', { addTokens: -1 }],
    ['fractional tokens', { addTokens: 0.5 }],
    ['too many tokens', { addTokens: 1e12 }],
    ['resume of the wrong type', { resume: 'yes' }],
    ['a 1 MB note', { note: huge }],
    ['an unknown field', { force: true }],
  ],
  message: [
    ...common,
    ['no text', { by: 'x' }],
    ['empty text', { text: '' }],
    ['a 1 MB text', { text: huge }],
    ['text of the wrong type', { text: { nested: true } }],
    ['an unknown field', { text: 'hi', urgent: true }],
  ],
  taskProgress: [
    ...common,
    ['a fractional tick', { tick: 1.5, tokensUsed: 1 }],
    ['negative tokens', { tick: 1, tokensUsed: -10 }],
  ],
  SYSTEM_HALT: [...common, ['a 1 MB note', { note: huge }], ['an unknown field', { now: true }]],
};

/** The update's failure: a typed, non-retryable InvalidArgument that says what was wrong. */
async function refusedAsInvalid(run: Promise<unknown>): Promise<string> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  const cause = (err as WorkflowUpdateFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  expect((cause as ApplicationFailure).type).toBe('InvalidArgument');
  return (cause as ApplicationFailure).message;
}

describe('a live agent under a corpus of malformed payloads', () => {
  it('refuses each bad update to its caller, drops each bad signal, and then still answers, runs its next task and halts', async () => {
    const agentId = uniqueId('corpus');
    const first = await h.agents.submit(agentId, { goal: 'first', config: config() });
    await h.agents.waitForTask(agentId, first.taskId);
    const before = await h.agents.status(agentId);
    const handle = h.agents.client.workflow.getHandle(agentWorkflowId(agentId));

    const messages: string[] = [];
    for (const [what, payload] of corpus.submitTask!) {
      messages.push(
        `submitTask ${what}: ${await refusedAsInvalid(handle.executeUpdate(submitTaskUpdate, { args: [payload as never] }))}`,
      );
    }
    for (const [what, payload] of corpus['admin:unlock']!) {
      messages.push(
        `admin:unlock ${what}: ${await refusedAsInvalid(handle.executeUpdate(unlockUpdate, { args: [payload as never] }))}`,
      );
    }
    for (const [what, payload] of corpus.message!) {
      messages.push(
        `sendMessage ${what}: ${await refusedAsInvalid(handle.executeUpdate(messageUpdate, { args: [payload as never] }))}`,
      );
    }
    // Each refusal names what was wrong, not a stack trace.
    for (const m of messages) expect(m).not.toMatch(/\n\s+at /);
    expect(messages.find((m) => m.startsWith('submitTask a negative priority'))).toMatch(/priority/);
    expect(messages.find((m) => m.startsWith('admin:unlock negative tokens'))).toMatch(/addTokens/);
    expect(messages.find((m) => m.startsWith('sendMessage a 1 MB text'))).toMatch(/at most 8000 characters/);

    // Signals cannot answer: each bad one is dropped (the halt signal halts regardless, so it goes last).
    for (const [, payload] of corpus['admin:unlock']!) await handle.signal(unlockSignal, payload as never);
    for (const [, payload] of corpus.message!) await handle.signal(messageSignal, payload as never);
    for (const [, payload] of corpus.taskProgress!) await handle.signal(taskProgressSignal, payload as never);

    // It still answers, nothing of the above reached its state, and it runs the next task.
    const after = await h.agents.status(agentId);
    // Each dropped signal was logged as such (counted, not printed).
    expect(seenWarnings(IGNORED)).toBeGreaterThanOrEqual(
      corpus['admin:unlock']!.length + corpus.message!.length + corpus.taskProgress!.length,
    );
    expect(after).toMatchObject({
      agentState: before.agentState,
      tokensUsed: before.tokensUsed,
      queue: [],
      unlocks: before.unlocks,
    });
    const next = await h.agents.submit(agentId, { goal: 'after the corpus', config: config() });
    expect((await h.agents.waitForTask(agentId, next.taskId)).outcome).toBe('COMPLETED');

    // A malformed SYSTEM_HALT still halts: the kill switch never depends on its payload being right.
    for (const [what, payload] of corpus.SYSTEM_HALT!) {
      await handle.signal(what === 'null' ? stopSignal : haltSignal, payload as never);
      const s = await h.agents.status(agentId);
      expect(s.agentState).toBe('STOPPED');
      expect((await h.agents.unlock(agentId, { note: 'next case' })).unlocked).toBe(true);
    }
    const last = await h.agents.submit(agentId, { goal: 'after the halts', config: config() });
    expect((await h.agents.waitForTask(agentId, last.taskId)).outcome).toBe('COMPLETED');
  });
});

describe('a first submit the agent refuses', () => {
  it('leaves no agent behind, whoever sent it: the agent it started ends in the workflow task that refused it', async () => {
    const agentId = uniqueId('refused-first');
    const workflowId = agentWorkflowId(agentId);
    // Sent raw, with the config in the start arguments as another SDK might: the validator refuses the empty goal.
    const startWorkflowOperation = new WithStartWorkflowOperation('agentWorkflow', {
      workflowId,
      taskQueue: h.taskQueue,
      args: [{ agentId, config: config() }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    expect(
      await refusedAsInvalid(
        h.agents.client.workflow.executeUpdateWithStart(submitTaskUpdate, {
          args: [{ goal: ' ' } as never],
          startWorkflowOperation,
        }),
      ),
    ).toMatch(/non-empty goal/);
    const ended = await eventually('the agent to end', async () => {
      const d = await h.agents.client.workflow.getHandle(workflowId).describe();
      return d.status.name === 'RUNNING' ? undefined : d;
    });
    expect(ended.status.name).toBe('COMPLETED');
    await expect(h.agents.status(agentId)).rejects.toBeInstanceOf(NotFoundError);
    // The id is free: a good submit starts the agent anew.
    const { taskId } = await h.agents.submit(agentId, { goal: 'now a real one', config: config() });
    expect((await h.agents.waitForTask(agentId, taskId)).outcome).toBe('COMPLETED');
  });
});

describe('what an agent carries stays bounded', () => {
  it('runs 200 tasks that each write 100 KB through one agent, continuing as new, and still answers with a small state', async () => {
    const agents = new AgentClient({ connection: h.connection, taskQueue: h.taskQueue, continueAsNewAfterEvents: 300 });
    const agentId = uniqueId('big-writes');
    const content = 'w'.repeat(100_000);
    const cfg = scriptedConfig(
      writeScript([
        {
          toolCalls: [{ name: 'fs.write', args: { path: 'out.txt', content } }],
          usage: { inputTokens: 1, outputTokens: 1 },
        },
        DONE,
      ]),
      makeWorkspace(),
    );
    const handle = agents.client.workflow.getHandle(agentWorkflowId(agentId));
    let last;
    let firstRun: string | undefined;
    for (let i = 0; i < 200; i++) {
      const { taskId } = await agents.submit(agentId, { goal: `write ${i}`, config: cfg });
      last = await agents.waitForTask(agentId, taskId);
      expect(last.outcome).toBe('COMPLETED');
      firstRun ??= (await handle.describe()).runId;
    }
    // The caller still gets the whole argument, from the task workflow's own result.
    expect((last!.toolCalls[0]?.args as { content: string }).content).toHaveLength(100_000);
    const s = await agents.status(agentId);
    expect(s.tasks).toHaveLength(LIMITS.keptResults);
    expect(jsonBytes(s)).toBeLessThan(LIMITS.keptResults * LIMITS.keptResultBytes + 50_000);
    expect((s.tasks.at(-1)?.toolCalls[0]?.args as { content: string }).content).toMatch(
      /^w{2000}…\[98000 more characters left out\]$/,
    );
    // It continued as new on the way, carrying that state.
    expect((await handle.describe()).runId).not.toBe(firstRun);
  });
});

describe('Temporal’s payload limit inside the config’s own bounds', () => {
  it('keeps a turn whose results would outgrow one LLM call inside the window: each result cut to its share, the call’s input small', async () => {
    const agentId = uniqueId('big-context');
    // 100 results of 20 KB: 1.6 MB of context once, more than an LLM call's payload could ever carry.
    const reads = Array.from({ length: 100 }, () => ({ name: 'fs.read', args: { path: 'big.txt' } }));
    const cfg = scriptedConfig(
      writeScript([{ toolCalls: reads }, DONE]),
      makeWorkspace({ 'big.txt': 'b'.repeat(20_000) }),
      { contextWindow: 200 },
    );
    const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'read it all', config: cfg });
    const r = await h.agents.waitForTask(agentId, taskId);
    expect(r).toMatchObject({ outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ticks: 2 });
    expect(r.toolCalls).toHaveLength(100);

    const history = await settledHistory(h.agents.client, workflowId);
    const second = llmInputs(history)[1];
    if (!second) throw new Error('no second LLM call');
    // The activity input is a delta of 100 references; what the provider receives fits contextTokens.
    expect(JSON.stringify(second).length).toBeLessThan(16_000);
    const sent = await resolveLlmInput(second);
    const results = sent.messages.filter((m) => m.role === 'tool');
    expect(results).toHaveLength(100);
    expect(
      results.every((m) => 'text' in m && /cut to fit the context window: \d+ of \d+ characters left out/.test(m.text)),
    ).toBe(true);
    // A quarter of the 1.6 MB the results would have been whole.
    expect(JSON.stringify(sent.messages).length).toBeLessThan(400_000);
  });
});

describe('a bug inside a task workflow', () => {
  it('fails that task workflow instead of retrying its workflow task forever', async () => {
    // A task input no agent would send (the agent's config is always complete): reading it throws a TypeError.
    const handle = await h.agents.client.workflow.start('taskWorkflow', {
      taskQueue: h.taskQueue,
      workflowId: uniqueId('buggy-task'),
      args: [
        { agentId: 'nobody', taskId: 'task-1', goal: 'g', config: {}, counters: {}, agentTokensUsed: 0, messages: [] },
      ],
    });
    const err = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(String((err as WorkflowFailedError).cause?.message)).toMatch(/undefined|Cannot read/);
  });

  it('pauses the agent for a human with FATAL E_INTERNAL when its task workflow ends abnormally', async () => {
    const agentId = uniqueId('task-dies');
    const slow = scriptedConfig(writeScript([{ delayMs: 60_000, text: 'slow' }, DONE]), makeWorkspace());
    const { workflowId } = await h.agents.submit(agentId, { goal: 'dies', config: slow });
    // The agent names its current task before the child has started: wait for the child's LLM call.
    await activityRunning(h.agents.client, workflowId, 'llm');
    await h.agents.client.workflow.getHandle(workflowId).terminate('operator terminated the task workflow');
    const s = await eventually('the agent paused', async () => {
      const st = await h.agents.status(agentId);
      return st.agentState === 'ERROR_PAUSED' ? st : undefined;
    });
    expect(s.reason).toMatchObject({ code: 'FATAL' });
    expect(s.reason?.message).toMatch(/^E_INTERNAL: .*Terminated/i);
    // The alert follows the pause (the agent records the lock, then runs its alert activity).
    await eventually('the alert', async () =>
      alerts.some((a) => a.includes(agentId) && a.includes('"FATAL"')) ? true : undefined,
    );
    // It refuses work until a human unlocks it, then runs again.
    await expect(h.agents.submit(agentId, { goal: 'refused', config: config() })).rejects.toThrow(/ERROR_PAUSED/);
    await h.agents.unlock(agentId, { note: 'looked at it' });
    const next = await h.agents.submit(agentId, { goal: 'runs', config: config() });
    expect((await h.agents.waitForTask(agentId, next.taskId)).outcome).toBe('COMPLETED');
  });
});
