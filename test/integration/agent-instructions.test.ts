/**
 * An agent's own instructions and tool allow-list, through real workflows (issue 15): the instructions
 * reach the model in the anchored system message after the guide's rules, only the allowed tools are
 * offered, and a call to another tool is pain (E_UNKNOWN_TOOL) that never reaches a tool activity.
 */
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { done, LIST, read, turn } from '../helpers/scenarios';
import { llmRequests, settledHistory, toolInputs } from '../helpers/workflow-history';
import { followTask, type TaskEvent } from '../../client/follow';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'instructions' });
});
afterAll(async () => h?.stop());

it('gives the model the owner’s instructions and only the allowed tools, and turns a call to another into pain', async () => {
  const agentId = uniqueId('owned');
  const config = scriptedConfig(
    writeScript([turn(read('notes.md')), turn(LIST), done('Listed.')]),
    makeWorkspace({ 'notes.md': 'n\n' }),
    {
      instructions: 'Only ever list directories; never read files.',
      tools: { allow: ['fs.list'] },
    },
  );
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'Look around.', config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: 3, finalText: 'Listed.' });
  expect(result.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([
    ['fs.read', 'failed', 'E_UNKNOWN_TOOL'],
    ['fs.list', 'ok', undefined],
  ]);
  expect(result.injections[0]?.text).toContain("Tool 'fs.read' is not offered to this agent.");

  const history = await settledHistory(h.agents.client, workflowId);
  // The refused call never ran: the only tool activity is the list.
  expect(toolInputs(history).map((t) => t.name)).toEqual(['fs.list']);
  const [first] = await llmRequests(history);
  expect(first?.tools.map((t) => t.name)).toEqual(['fs.list']);
  const system = first?.messages[0];
  expect(system?.role).toBe('system');
  // `starry logs` shows the pain of the refused call, though no tool activity ran for it.
  const events: TaskEvent[] = [];
  for await (const e of followTask(h.agents.client, workflowId, { live: false })) events.push(e);
  const pain = events.flatMap((e) =>
    e.kind === 'llm-call' ? e.injected.filter((i) => i.label === 'pain').map((i) => i.text) : [],
  );
  expect(pain).toEqual([expect.stringContaining("Tool 'fs.read' is not offered to this agent.")]);
  expect(system && 'text' in system ? system.text : '').toMatch(
    /Tools: fs\.list\.\n[\s\S]*no tool call\.\n\nInstructions for this agent, from its owner \(the rules above still hold\):\nOnly ever list directories; never read files\.$/,
  );
});
