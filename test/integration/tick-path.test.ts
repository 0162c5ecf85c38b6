/**
 * What a tick waits for (issue 17): the agent hears of its task's progress every
 * PROGRESS_EVERY_TICKS ticks, and that report travels alongside the next LLM call instead of before it,
 * so most ticks cost no workflow task on the agent; a client still sees every tick, live, because
 * `status` reads the running task's counts from the task itself. The task's search attributes take
 * its counts on the same ticks, so most ticks cost no visibility write either.
 */
import { read, turn, done, missing } from '../helpers/scenarios';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { activityRunning, firstPayload, historyOf } from '../helpers/workflow-history';
import { PROGRESS_EVERY_TICKS } from '../../core/task-run';
import { taskWorkflowId } from '../../workflows/messages';
import { TickIndexKey, TokensUsedKey } from '../../workflows/search-attributes';
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
  const config = scriptedConfig(writeScript(script), makeWorkspace({ 'notes.md': 'n\n' }), { safety: { repeatThreshold: 100 } });
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
    writeScript([turn(read('notes.md')), turn(read('notes.md')), turn({ name: 'shell.run', args: { command: 'sleep', args: ['30'] } }), done()]),
    makeWorkspace({ 'notes.md': 'n\n' }),
  );
  const { taskId } = await h.agents.submit(agentId, { goal: 'read twice, then wait', config });
  // Tick 3 runs for 30 s and no report has reached the agent (the first is due at tick 10): only the
  // task knows its tick, so a status that shows it read it there.
  const status = await eventually('the status at tick 3 with its LLM call counted', async () => {
    const s = await h.agents.status(agentId);
    return s.currentTask?.tick === 3 && s.currentTask.runTokens === 330 ? s : undefined;
  }, 20_000);
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
  const script = [turn(read('notes.md')), turn(read('notes.md')), turn(missing(1)), ...Array.from({ length: ticks - 4 }, () => turn(read('notes.md'))), done()];
  const config = scriptedConfig(writeScript(script), makeWorkspace({ 'notes.md': 'n\n' }), { safety: { repeatThreshold: 100 } });
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: `read ${ticks - 1} times`, config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED', ticks });

  const written = (await historyOf(h.agents.client, workflowId)).flatMap((e) => {
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    return fields?.TickIndex ? [{ tick: firstPayload<number>({ payloads: [fields.TickIndex] }), error: fields.LastErrorCode ? firstPayload<string>({ payloads: [fields.LastErrorCode] }) : undefined }] : [];
  });
  // The start, the error, the agent's report at tick 10, the close: not one write per tick.
  expect(written).toEqual([{ tick: 0 }, { tick: 3, error: 'ENOENT' }, { tick: PROGRESS_EVERY_TICKS }, { tick: ticks }].map((w) => ({ error: undefined, ...w })));
  const sa = (await h.agents.client.workflow.getHandle(workflowId).describe()).typedSearchAttributes;
  expect(sa.get(TickIndexKey)).toBe(ticks);
  expect(sa.get(TokensUsedKey)).toBe(result.tokensUsed);
});
