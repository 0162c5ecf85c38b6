import { TaskResultSchema } from '../contract';
import { LIMITS } from '../payloads';
import { toolSpecs } from '../tools';
import type { ToolCallRecord } from '../types';
import { CARRIED_RECORDS } from './checkpoint';
import { closed, continuation, transcript } from './output';
import { partsOf, roundTrip } from './test-support';

const lock = { agentState: 'SAFETY_LOCKOUT' as const, reason: { code: 'LOOP_CAP' as const, message: 'cap' } };
const record = (tick: number): ToolCallRecord => ({ tick, name: 'fs.read', args: {}, fingerprint: 'f', status: 'ok' });

/** A run that made `turns` calls of one tool call each, its messages inline. */
function runWith(turns: number, ...args: Parameters<typeof partsOf>) {
  const run = partsOf(...args);
  for (let n = 1; n <= turns; n++) {
    run.checkpoint.ticks = n;
    run.checkpoint.messages.push(
      { role: 'assistant', text: `turn ${n}` },
      { role: 'tool', callId: `c${n}`, name: 'fs.read', text: 'ok' },
    );
    run.checkpoint.toolCalls.push(record(n));
  }
  return run;
}

describe('the output of a run that ends', () => {
  it('is a result in the contract’s shape, with how it ended and the reason the lock gives', () => {
    const run = runWith(1);
    run.spend.data.runTokens = 15;
    const out = closed(run, { outcome: 'SUSPENDED', agentState: 'SAFETY_LOCKOUT', lock });
    expect(TaskResultSchema.parse(out.result)).toEqual(out.result);
    expect(out.result).toMatchObject({
      outcome: 'SUSPENDED',
      agentState: 'SAFETY_LOCKOUT',
      reason: lock.reason,
      ticks: 1,
    });
    expect(out).toMatchObject({ runTokens: 15, lock, counters: run.counters.data.counters });
    expect(out.result.transcript).toBeUndefined();
  });

  it('carries a suspended run’s checkpoint with the anchored head and the window only, and no other run’s', () => {
    const run = runWith(3, { contextWindow: 2 });
    const { checkpoint } = closed(run, { outcome: 'SUSPENDED', agentState: 'SAFETY_LOCKOUT', lock });
    expect(checkpoint?.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(closed(runWith(3), { outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT' }).checkpoint).toBeUndefined();
  });

  it('in store mode, carries the bounded checkpoint, counting what it dropped, and says where the transcript is', () => {
    const run = runWith(CARRIED_RECORDS + 2, {}, {}, true);
    run.checkpoint.sent = { ref: 'manifest-9', from: 2, to: run.checkpoint.messages.length - 1 };
    const out = closed(run, { outcome: 'SUSPENDED', agentState: 'SAFETY_LOCKOUT', lock });
    expect(out.checkpoint?.toolCalls).toHaveLength(CARRIED_RECORDS);
    expect(run.counters.data.omitted).toEqual({ toolCalls: 2, injections: 0 });
    expect(out.result.transcript).toEqual({ manifest: 'manifest-9', tail: [run.checkpoint.messages.at(-1)] });
  });

  it('hands back the messages the model never saw, and keeps the result within the payload limit', () => {
    const run = runWith(1);
    run.inbox.receive({ text: 'too late' });
    const out = closed(run, {
      outcome: 'COMPLETED',
      agentState: 'WAITING_FOR_EVENT',
      finalText: 'x'.repeat(LIMITS.taskResultBytes),
    });
    expect(out.undelivered).toEqual([{ text: 'too late' }]);
    expect(JSON.stringify(out.result).length).toBeLessThanOrEqual(LIMITS.taskResultBytes);
  });
});

describe('the next run’s input when the task continues as new', () => {
  it('carries everything this run counted, the waiting messages and the listed tools, as plain data', () => {
    const run = runWith(2, {}, { messages: [{ text: 'early' }] });
    run.spend.data.runTokens = 30;
    run.counters.failedWith('EPERM');
    run.inbox.receive({ text: 'keep going' });
    run.tools = toolSpecs(['fs.read']);
    const next = roundTrip(continuation(run));
    expect(next.continued).toEqual({
      runTokens: 30,
      allowanceStart: 0,
      received: 1,
      lastErrorCode: 'EPERM',
      omitted: { toolCalls: 0, injections: 0 },
    });
    expect(next.messages).toEqual([{ text: 'early' }, { text: 'keep going' }]);
    expect(next.tools?.map((t) => t.name)).toEqual(['fs.read']);
    expect(next.checkpoint?.ticks).toBe(2);
    expect(run.inbox.take()).toEqual([]); // handed on, not delivered twice
  });

  it('carries the newest records only, counting the others as omitted', () => {
    const run = runWith(CARRIED_RECORDS + 5);
    const next = continuation(run);
    expect(next.checkpoint?.toolCalls).toHaveLength(CARRIED_RECORDS);
    expect(next.continued?.omitted).toEqual({ toolCalls: 5, injections: 0 });
  });
});

describe('the transcript a run leaves in the store', () => {
  it('is the last call’s manifest and the entries after it; all of them before any call', () => {
    const run = runWith(1, {}, {}, true);
    expect(transcript(run.checkpoint)).toEqual({ tail: run.checkpoint.messages });
    run.checkpoint.sent = { ref: 'm-1', from: 2, to: 3 };
    expect(transcript(run.checkpoint)).toEqual({ manifest: 'm-1', tail: run.checkpoint.messages.slice(3) });
  });
});
