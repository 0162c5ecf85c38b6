import { RefusedError } from '../errors';
import { LIMITS } from '../payloads';
import { keepMessage, keepUndelivered, refuseMessage, takeMessage, takePending, type MessagesData } from './messages';
import type { RunningTask } from './runs';

const running = (): RunningTask => ({
  task: { taskId: 'task-1', goal: 'g', priority: 5, seq: 1 },
  workflowId: 'wf-task-1',
  tick: 0,
  runTokens: 0,
});

describe('agent messages: human follow-ups', () => {
  it('forwards to the running task, counting them, and keeps them for the next task when none runs', () => {
    const d: MessagesData = { pendingMessages: [] };
    expect(takeMessage(d, undefined, { text: 'idle' })).toEqual({});
    const current = running();
    expect(takeMessage(d, current, { text: 'busy' })).toEqual({ forwardTo: 'wf-task-1' });
    expect(current.messages).toBe(1);
    expect(takePending(d)).toEqual([{ text: 'idle' }]);
    expect(d.pendingMessages).toEqual([]);
  });

  it('never drops one: what a run did not show its LLM goes first, then what could not be forwarded', () => {
    const d: MessagesData = { pendingMessages: [{ text: 'came meanwhile' }] };
    keepUndelivered(d, [{ text: 'too late', by: 'carol' }]);
    keepUndelivered(d, undefined);
    keepMessage(d, { text: 'task had closed' });
    expect(takePending(d)).toEqual([
      { text: 'too late', by: 'carol' },
      { text: 'came meanwhile' },
      { text: 'task had closed' },
    ]);
  });

  it('refuses beyond what a run or an idle agent keeps, saying what to do', () => {
    const d: MessagesData = { pendingMessages: [] };
    for (let i = 0; i < LIMITS.pendingMessages; i++) takeMessage(d, undefined, { text: `idle ${i}` });
    expect(() => refuseMessage(d, 'a1', undefined)).toThrow(
      `agent a1 already holds ${LIMITS.pendingMessages} messages for its next task, the most it keeps: submit a task first`,
    );
    const current = { ...running(), messages: LIMITS.messagesPerRun - 1 };
    expect(() => refuseMessage(d, 'a1', current)).not.toThrow();
    takeMessage(d, current, { text: 'last' });
    expect(() => refuseMessage(d, 'a1', current)).toThrow(RefusedError);
    expect(() => refuseMessage(d, 'a1', current)).toThrow(
      `task task-1 has already received ${LIMITS.messagesPerRun} messages, the most one run takes: wait for it to end, or halt it`,
    );
  });

  it('is plain data that survives JSON, as continue-as-new carries it', () => {
    const d: MessagesData = { pendingMessages: [] };
    takeMessage(d, undefined, { text: 'kept', by: 'dave' });
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
  });
});
