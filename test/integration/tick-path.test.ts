/**
 * What a tick waits for (issue 17): the progress report to the agent travels alongside the next LLM
 * call instead of before it, so a tick costs one workflow task less; the agent still learns every tick.
 */
import { read, turn, done } from '../helpers/scenarios';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { historyOf } from '../helpers/workflow-history';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'tick-path' });
});
afterAll(async () => h?.stop());

it('schedules the next LLM call in the same workflow task that sends the tick’s progress, and the agent counts every tick', async () => {
  const agentId = uniqueId('tick-path');
  const config = scriptedConfig(writeScript([turn(read('notes.md')), turn(read('notes.md')), turn(read('notes.md')), done()]), makeWorkspace({ 'notes.md': 'n\n' }));
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'read three times', config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: 4 });

  const events = await historyOf(h.agents.client, workflowId);
  const sent = events.flatMap((e, i) => (e.kind === 'signalExternalWorkflowExecutionInitiated' ? [i] : []));
  expect(sent).toHaveLength(3);
  // Right after each progress signal: the next tick's LLM call, not a wait for the signal's delivery.
  expect(sent.map((i) => events[i + 1]?.activityTaskScheduledEventAttributes?.activityType?.name)).toEqual(['llm', 'llm', 'llm']);
  expect((await h.agents.status(agentId)).tokensUsed).toBe(result.tokensUsed);
});
