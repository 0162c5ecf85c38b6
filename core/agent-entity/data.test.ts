import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAgentConfig } from '../config';
import { emptyInbox } from '../priority-inbox';
import { initialCounters } from '../safety-counters';
import { newAgentData, type AgentData } from './data';

/** Every field of `AgentData`: the compiler checks this list against the type, both ways. */
const FIELDS: Record<keyof AgentData, true> = {
  agentId: true,
  config: true,
  agentState: true,
  reason: true,
  halt: true,
  tokensUsed: true,
  cachedInputTokens: true,
  costUsd: true,
  inbox: true,
  counters: true,
  lastErrorCode: true,
  nextTaskNumber: true,
  current: true,
  suspended: true,
  resumeRequested: true,
  cancelledTasks: true,
  tasks: true,
  unlocks: true,
  pendingMessages: true,
  addedTokens: true,
  limitChanges: true,
  submits: true,
  approvals: true,
  decided: true,
};

/** The state a recorded agent carried across its continue-as-new (the replay fixture's last event). */
function recordedCarried(): Record<string, unknown> {
  const file = path.join(__dirname, '../../test/fixtures/histories/carried-agent.json');
  type Event = { workflowExecutionContinuedAsNewEventAttributes?: { input: { payloads: { data: string }[] } } };
  const events: Event[] = JSON.parse(readFileSync(file, 'utf8')).events;
  const handedOn = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes;
  if (!handedOn) throw new Error(`${file} does not end with a continue-as-new`);
  const input = JSON.parse(Buffer.from(handedOn.input.payloads[0]!.data, 'base64').toString('utf8'));
  return input.carried;
}

describe('agent data: what continue-as-new carries', () => {
  it('starts a new agent waiting and holding nothing, with the config it is given', () => {
    const config = parseAgentConfig({}, 'scripted:x.json');
    expect(newAgentData('a1', config)).toEqual({
      agentId: 'a1',
      config,
      agentState: 'WAITING_FOR_EVENT',
      tokensUsed: 0,
      inbox: emptyInbox(),
      counters: initialCounters(),
      nextTaskNumber: 1,
      resumeRequested: false,
      cancelledTasks: [],
      tasks: [],
      unlocks: [],
      pendingMessages: [],
    });
    expect(newAgentData('a1')).not.toHaveProperty('config');
  });

  it('reads the state the code before carried: each of its fields is one of AgentData’s parts', () => {
    const carried = recordedCarried();
    expect(carried).toMatchObject({ agentState: 'SAFETY_LOCKOUT', suspended: { task: { taskId: 'task-1' } } });
    expect(Object.keys(carried).filter((k) => !(k in FIELDS))).toEqual([]);
  });

  it('survives JSON and structuredClone unchanged', () => {
    const d = newAgentData('a1', parseAgentConfig({}, 'scripted:x.json'));
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
    expect(structuredClone(d)).toEqual(d);
  });
});
