import type { LlmToolCall } from '../llm';
import { ApprovalBook, type AskingRun } from './approval-book';
import type { PendingCall } from './io';
import { configOf, read, roundTrip } from './test-support';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const write = (id: string, path = 'src/a.ts'): LlmToolCall => ({ id, name: 'fs.write', args: { path, content: 'x' } });
const offered = ['fs.read', 'fs.write', 'fs.list', 'shell.run', 'http.get'];
const rules = { tools: { approval: { ask: ['fs.write'], deny: ['http.get'], timeoutMs: 60_000 } } };
const runOf = (config = configOf(rules), over: Partial<AskingRun> = {}): AskingRun => ({
  input: { taskId: 'task-1', config },
  workflowId: 'agent-a1-task-1',
  offered,
  ...over,
});
/** Tick 3, at T0. */
const AT = { tick: 3, nowMs: T0 };
const decision = (callId: string, over: Record<string, unknown> = {}) => ({
  callId,
  decision: 'approve' as const,
  by: 'alice',
  at: '2026-01-01T00:01:00.000Z',
  ...over,
});
/** A call at its turn, its arguments checked. */
const pendingOf = (call: LlmToolCall): PendingCall => ({
  call,
  record: { tick: 3, name: call.name, args: call.args, fingerprint: 'f', status: 'ok' },
});

describe('ApprovalBook: asking', () => {
  it('asks for each call a rule names, with its id, its arguments, the rule and when it expires', () => {
    const book = new ApprovalBook();
    expect(book.ask([read('c1'), write('c2')], runOf(), AT)).toEqual([
      {
        callId: 't3.1',
        taskId: 'task-1',
        workflowId: 'agent-a1-task-1',
        tool: 'fs.write',
        args: { path: 'src/a.ts', content: 'x' },
        tick: 3,
        rule: 'fs.write',
        from: 'config',
        askedAt: '2026-01-01T00:00:00.000Z',
        expiresAt: '2026-01-01T00:01:00.000Z',
      },
    ]);
    expect(book.waiting().map((p) => p.callId)).toEqual(['t3.1']);
  });

  it('asks nothing without rules, the config’s or the worker’s; the worker’s alone are enough', () => {
    expect(new ApprovalBook().ask([write('c1')], runOf(configOf()), AT)).toEqual([]);
    const worker = runOf(configOf(), {
      input: { taskId: 't', config: configOf(), workerApproval: { ask: ['fs.write'], deny: [] } },
    });
    expect(new ApprovalBook().ask([write('c1')], worker, AT)).toMatchObject([{ from: 'worker' }]);
  });

  it('never asks about a malformed call (it is refused as pain at its turn)', () => {
    const book = new ApprovalBook();
    expect(book.ask([{ id: 'c1', name: 'fs.write', args: { path: 1 } }], runOf(), AT)).toEqual([]);
    expect(book.settle(0, pendingOf(write('c1')), offered)).toBeUndefined();
  });

  it('refuses a call a deny rule names unasked, and the calls past the 20 that may wait', () => {
    const book = new ApprovalBook();
    const calls = [
      { id: 'h', name: 'http.get', args: { url: 'https://example.com/' } },
      ...Array.from({ length: 21 }, (_, i) => write(`w${i}`, `src/${i}.ts`)),
    ];
    expect(book.ask(calls, runOf(), AT)).toHaveLength(20);
    expect(book.settle(0, pendingOf(calls[0]!), offered)).toEqual({
      refused: expect.objectContaining({ code: 'E_DENIED', message: expect.stringMatching(/agent's config/) }),
    });
    expect(book.settle(21, pendingOf(calls[21]!), offered)).toEqual({
      refused: expect.objectContaining({ message: expect.stringMatching(/more than 20 calls of one turn waited/) }),
    });
  });
});

describe('ApprovalBook: deciding', () => {
  it('takes one decision per waiting call, and says why it refuses another', () => {
    const book = new ApprovalBook();
    book.ask([write('c1')], runOf(), AT);
    expect(book.decide(decision('t3.9'))).toBe('no call t3.9 waits in this turn');
    expect(book.decide(decision('t3.0'))).toBeUndefined();
    expect(book.decide(decision('t3.0'))).toBe('call t3.0 was decided already');
    expect(book.waiting()).toEqual([]);
  });

  it('counts the time left until the first wait runs out, and expires the calls nobody decided', () => {
    const book = new ApprovalBook();
    book.ask([write('c1')], runOf(), AT);
    expect(book.timeLeft(T0 + 10_000)).toBe(50_000);
    expect(book.timeLeft(T0 + 70_000)).toBe(0);
    book.expire(T0 + 59_999);
    expect(book.waiting()).toHaveLength(1);
    book.expire(T0 + 60_000);
    expect(book.waiting()).toEqual([]);
    expect(book.decide(decision('t3.0'))).toBe('call t3.0 expired before the decision arrived');
  });
});

describe('ApprovalBook: a call at its turn', () => {
  const decided = (over: Record<string, unknown>) => {
    const book = new ApprovalBook();
    book.ask([write('c1')], runOf(), AT);
    book.decide(decision('t3.0', over));
    const pending = pendingOf(write('c1'));
    return { settled: book.settle(0, pending, offered), record: pending.record };
  };

  it('runs with the model’s arguments when approved as is, recording who approved', () => {
    const { settled, record } = decided({ note: 'fine' });
    expect(settled).toMatchObject({
      args: { path: 'src/a.ts', content: 'x' },
      event: { attributes: { 'starry.approval.decision': 'approved' } },
    });
    expect(record.approval).toEqual({
      decision: 'approved',
      by: 'alice',
      at: '2026-01-01T00:01:00.000Z',
      note: 'fine',
    });
  });

  it('runs with the approver’s edited arguments, keeping the model’s own on the record', () => {
    const { settled, record } = decided({ args: { path: 'src/b.ts', content: 'y' } });
    expect(settled).toMatchObject({ args: { path: 'src/b.ts', content: 'y' } });
    expect(record).toMatchObject({
      args: { path: 'src/b.ts', content: 'y' },
      approval: { modelArgs: { path: 'src/a.ts', content: 'x' } },
    });
  });

  it('refuses an edit that fails the tool’s schema, saying it was the approver’s', () => {
    const { settled } = decided({ args: { path: 3 } });
    expect(settled).toMatchObject({
      refused: { code: 'E_SCHEMA', message: expect.stringMatching(/^the approver's edited arguments: /) },
    });
  });

  it('refuses a denied call with the human’s reason, and an expired one saying nobody decided', () => {
    const { settled, record } = decided({ decision: 'deny', reason: 'not on main' });
    expect(settled).toMatchObject({
      refused: { code: 'E_DENIED', message: 'alice denied this fs.write call: not on main' },
      event: { attributes: { 'starry.approval.decision': 'denied' } },
    });
    expect(record.approval).toMatchObject({ decision: 'denied', reason: 'not on main' });
    const book = new ApprovalBook();
    book.ask([write('c1')], runOf(), AT);
    book.expire(T0 + 60_000);
    const pending = pendingOf(write('c1'));
    expect(book.settle(0, pending, offered)).toMatchObject({
      refused: { message: 'no decision within 60 s: this fs.write call was not run' },
      event: { attributes: { 'starry.approval.decision': 'expired' } },
    });
    expect(pending.record.approval).toEqual({ decision: 'expired' });
  });

  it('serializes and deserializes: a copy takes the decision the original waits for', () => {
    const book = new ApprovalBook();
    book.ask([read('c0'), write('c1')], runOf(), AT);
    const copy = new ApprovalBook(roundTrip(book.data));
    expect(copy.waiting()).toEqual(book.waiting());
    expect(copy.decide(decision('t3.1'))).toBeUndefined();
    expect(copy.settle(1, pendingOf(write('c1')), offered)).toMatchObject({ args: { path: 'src/a.ts' } });
  });
});
