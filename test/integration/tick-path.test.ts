/**
 * What a tick waits for (issue 17): the agent hears of its task's progress every
 * PROGRESS_EVERY_TICKS ticks, and that report travels alongside the next LLM call instead of before it,
 * so most ticks cost no workflow task on the agent; a client still sees every tick, live, because
 * `status` reads the running task's counts from the task itself. The task's search attributes take
 * its counts on the same ticks, so most ticks cost no visibility write either; an agent writes its own
 * only when they change, and hands its task its first ones with the task's start.
 */
import { read, turn, done, missing } from '../helpers/scenarios';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { activityRunning, firstPayload, historyOf } from '../helpers/workflow-history';
import { PROGRESS_EVERY_TICKS } from '../../core/task-run';
import { agentWorkflowId, taskWorkflowId } from '../../workflows/messages';
import { AgentIdKey, AgentStateKey, TickIndexKey, TokensUsedKey } from '../../workflows/search-attributes';
import { eventually } from '../../dev/poll';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'tick-path' });
});
afterAll(async () => h?.stop());

it('reports to the agent every few ticks, alongside the next LLM call, and the agent counts every tick', async () => {
  const agentId = uniqueId('tick-path');
  const ticks = PROGRESS_EVERY_TICKS + 2;
  const script = [...Array.from({ length: ticks - 1 }, () => turn(read('notes.md'))), done()];
  const config = scriptedConfig(writeScript(script), makeWorkspace({ 'notes.md': 'n\n' }), {
    safety: { repeatThreshold: 100 },
  });
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: `read ${ticks - 1} times`, config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED', ticks });

  const events = await historyOf(h.agents.client, workflowId);
  const sent = events.flatMap((e, i) => (e.kind === 'signalExternalWorkflowExecutionInitiated' ? [i] : []));
  // One report, after tick 10; right after it the next tick's LLM call, not a wait for its delivery.
  expect(sent).toHaveLength(1);
  expect(events[sent[0]! + 1]?.activityTaskScheduledEventAttributes?.activityType?.name).toBe('llm');
  expect((await h.agents.status(agentId)).tokensUsed).toBe(result.tokensUsed);
});

it('shows a running task’s live tick and tokens in the agent’s status between two reports', async () => {
  const agentId = uniqueId('tick-live');
  const config = scriptedConfig(
    writeScript([
      turn(read('notes.md')),
      turn(read('notes.md')),
      turn({ name: 'shell.run', args: { command: 'sleep', args: ['30'] } }),
      done(),
    ]),
    makeWorkspace({ 'notes.md': 'n\n' }),
  );
  const { taskId } = await h.agents.submit(agentId, { goal: 'read twice, then wait', config });
  // Tick 3 runs for 30 s and no report has reached the agent (the first is due at tick 10): only the
  // task knows its tick, so a status that shows it read it there.
  const status = await eventually(
    'the status at tick 3 with its LLM call counted',
    async () => {
      const s = await h.agents.status(agentId);
      return s.currentTask?.tick === 3 && s.currentTask.runTokens === 330 ? s : undefined;
    },
    20_000,
  );
  expect(status.currentTask?.taskId).toBe(taskId);
  expect(status.tokensUsed).toBe(330);
  await activityRunning(h.agents.client, taskWorkflowId(agentId, taskId), 'tool');
  await h.agents.halt(agentId);
  await h.agents.waitForTask(agentId, taskId);
});

it('writes a task’s tick and tokens to its search attributes every few ticks, a new error code at once, and the final counts at the close', async () => {
  const agentId = uniqueId('tick-counts');
  const ticks = PROGRESS_EVERY_TICKS + 2;
  // Tick 3 fails (ENOENT): a new LastErrorCode, written at once with that tick's counts.
  const script = [
    turn(read('notes.md')),
    turn(read('notes.md')),
    turn(missing(1)),
    ...Array.from({ length: ticks - 4 }, () => turn(read('notes.md'))),
    done(),
  ];
  const config = scriptedConfig(writeScript(script), makeWorkspace({ 'notes.md': 'n\n' }), {
    safety: { repeatThreshold: 100 },
  });
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: `read ${ticks - 1} times`, config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED', ticks });

  const events = await historyOf(h.agents.client, workflowId);
  // The start: its agent gave the task its counts (and id and state) with the workflow's start.
  const started = events[0]?.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields;
  expect(firstPayload<number>({ payloads: [started?.TickIndex ?? {}] })).toBe(0);
  const written = events.flatMap((e) => {
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    return fields?.TickIndex
      ? [
          {
            tick: firstPayload<number>({ payloads: [fields.TickIndex] }),
            error: fields.LastErrorCode ? firstPayload<string>({ payloads: [fields.LastErrorCode] }) : undefined,
          },
        ]
      : [];
  });
  // The error, the agent's report at tick 10, the close: not one write per tick.
  expect(written).toEqual(
    [{ tick: 3, error: 'ENOENT' }, { tick: PROGRESS_EVERY_TICKS }, { tick: ticks }].map((w) => ({
      error: undefined,
      ...w,
    })),
  );
  const sa = (await h.agents.client.workflow.getHandle(workflowId).describe()).typedSearchAttributes;
  expect(sa.get(TickIndexKey)).toBe(ticks);
  expect(sa.get(TokensUsedKey)).toBe(result.tokensUsed);
});

it('writes an agent’s search attributes only when they change, and starts its task with them, so neither writes at its start', async () => {
  const agentId = uniqueId('tick-writes');
  const config = scriptedConfig(
    writeScript([turn(read('notes.md')), turn(read('notes.md')), done()]),
    makeWorkspace({ 'notes.md': 'n\n' }),
  );
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'read twice', config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: 3 });

  // Each upsert of ours, by the keys it writes (core's TemporalChangeVersion, written with a patch marker, aside).
  const writes = (events: Awaited<ReturnType<typeof historyOf>>) =>
    events.flatMap((e) => {
      const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
      const keys = Object.keys(fields ?? {}).filter((k) => k !== 'TemporalChangeVersion');
      return keys.length ? [Object.fromEntries(keys.map((k) => [k, firstPayload({ payloads: [fields![k]!] })]))] : [];
    });
  const agentEvents = await historyOf(h.agents.client, agentWorkflowId(agentId));
  // The client started the agent with its first state; the agent then wrote what moved: its state when
  // the task started, its tokens, tick and state when it ended (its TickIndex stays the tick its last task
  // stopped at, not 0). Before, it wrote every key five times.
  expect(writes(agentEvents)).toEqual([
    { AgentState: 'EXECUTING' },
    { TokensUsed: result.tokensUsed, AgentState: 'WAITING_FOR_EVENT', TickIndex: result.ticks },
  ]);
  const childStart = agentEvents.find(
    (e) => e.startChildWorkflowExecutionInitiatedEventAttributes,
  )?.startChildWorkflowExecutionInitiatedEventAttributes;
  const given = childStart?.searchAttributes?.indexedFields ?? {};
  expect(Object.fromEntries(Object.entries(given).map(([k, v]) => [k, firstPayload({ payloads: [v] })]))).toEqual({
    AgentId: agentId,
    AgentState: 'EXECUTING',
    TickIndex: 0,
    TokensUsed: 0,
  });
  // The task, started with those, writes only at its close.
  expect(writes(await historyOf(h.agents.client, workflowId))).toEqual([
    { AgentState: null, TickIndex: 3, TokensUsed: result.tokensUsed },
  ]);

  // What the visibility store and the list show is what the writes left.
  const agentSa = (await h.agents.client.workflow.getHandle(agentWorkflowId(agentId)).describe()).typedSearchAttributes;
  expect([
    agentSa.get(AgentIdKey),
    agentSa.get(AgentStateKey),
    agentSa.get(TokensUsedKey),
    agentSa.get(TickIndexKey),
  ]).toEqual([agentId, 'WAITING_FOR_EVENT', result.tokensUsed, result.ticks]);
  const listed = await eventually('the agent listed with its tokens', async () =>
    (await h.agents.listAgents()).agents.find((a) => a.agentId === agentId && a.tokensUsed === result.tokensUsed),
  );
  expect(listed).toMatchObject({ agentState: 'WAITING_FOR_EVENT' });
});
