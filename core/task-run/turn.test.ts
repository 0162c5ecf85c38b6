import type { AgentConfigInput } from '../config';
import { failure, normalizedError } from '../errors';
import { getGuide } from '../guides';
import type { LlmToolCall } from '../llm';
import { ApprovalBook } from './approval-book';
import { RunCounters } from './counters';
import type { ToolStep } from './io';
import { offeredNames } from './offer';
import { TelemetryBuffer } from './telemetry-buffer';
import { bad, checkpointOf, configOf, inputOf, read, roundTrip, textOf } from './test-support';
import { Turn, type TurnBooks } from './turn';

/** A task's books at tick 1, and its turn. */
function turnOf(config: AgentConfigInput = {}): { turn: Turn; books: TurnBooks } {
  const parsed = configOf(config);
  const checkpoint = checkpointOf(parsed);
  checkpoint.ticks = 1;
  const books: TurnBooks = {
    checkpoint,
    counters: RunCounters.of(inputOf(config), checkpoint),
    telemetry: new TelemetryBuffer(),
    config: parsed,
    guide: getGuide(parsed.guide),
    offered: offeredNames(undefined, parsed),
  };
  return { turn: Turn.at(1), books };
}
const calm = { halted: false, approvals: new ApprovalBook() };
/** Each call before its tool, a successful result for those that run. */
function runAll(turn: Turn, books: TurnBooks, calls: LlmToolCall[]): boolean[] {
  return calls.map((c) => {
    const step: ToolStep = turn.before(books, c, calm);
    if (step.run) turn.after(books, step.pending, { success: true, data: 'ok' });
    return step.run;
  });
}
const statuses = (books: TurnBooks) => books.checkpoint.toolCalls.map((r) => r.status);

describe('Turn: before a tool call', () => {
  it('runs a valid call with its checked arguments and a summary of what it acts on', () => {
    const { turn, books } = turnOf();
    const step = turn.before(books, { id: 'c1', name: 'fs.read', rawArguments: '{"path":"a.md"}' }, calm);
    expect(step).toMatchObject({ run: true, args: { path: 'a.md' }, summary: 'tool fs.read a.md' });
    expect(step.run && step.pending.record).toMatchObject({ tick: 1, name: 'fs.read', status: 'ok' });
    expect(books.checkpoint.toolCalls).toEqual([]); // recorded after the tool, not before
  });

  it('records a malformed call as pain without running it, counted like any failure', () => {
    const { turn, books } = turnOf();
    expect(turn.before(books, bad('c1'), calm)).toEqual({ run: false });
    expect(books.checkpoint.toolCalls[0]).toMatchObject({ status: 'failed', error: { code: 'E_UNKNOWN_TOOL' } });
    expect(books.counters.data).toMatchObject({
      lastErrorCode: 'E_UNKNOWN_TOOL',
      counters: { consecutiveFailures: 1 },
    });
    expect(books.checkpoint.messages.at(-1)).toMatchObject({ role: 'tool', callId: 'c1', isError: true });
  });

  it('skips every call after a halt, without counting them', () => {
    const { turn, books } = turnOf();
    expect(turn.before(books, read('c1'), { ...calm, halted: true })).toEqual({ run: false });
    expect(turn.before(books, read('c2'), calm)).toEqual({ run: false });
    expect(books.checkpoint.toolCalls.map((r) => r.error?.message)).toEqual([
      'SYSTEM_HALT: stopped by a human before this call started',
      'SYSTEM_HALT: stopped by a human before this call started',
    ]);
    expect(textOf(books.checkpoint.messages.at(-1))).toBe(
      'Not executed: SYSTEM_HALT: stopped by a human before this call started.',
    );
    expect(books.counters.data.counters.window).toEqual([]);
  });
});

describe('Turn: after a tool call', () => {
  it("keeps a result as the model's tool message, or a stored result by reference", () => {
    const { turn, books } = turnOf();
    runAll(turn, books, [read('c1')]);
    expect(books.checkpoint.messages.at(-1)).toEqual({ role: 'tool', callId: 'c1', name: 'fs.read', text: 'ok' });
    const step = turn.before(books, read('c2'), calm);
    if (!step.run) throw new Error('not run');
    turn.after(books, step.pending, { success: true, message: { role: 'tool', ref: 'result-2', bytes: 10 } });
    expect(books.checkpoint.messages.at(-1)).toEqual({ role: 'tool', ref: 'result-2', bytes: 10 });
    expect(statuses(books)).toEqual(['ok', 'ok']);
  });

  it("turns a failure into the guide's pain, with this failure in the counts, for the model and the trace", () => {
    const { turn, books } = turnOf({ guide: 'debugging' });
    const step = turn.before(books, read('c1'), calm);
    if (!step.run) throw new Error('not run');
    turn.after(books, step.pending, failure(normalizedError({ code: 'EPERM', message: 'no', source: 'fs.read' })));
    expect(books.checkpoint.injections).toEqual([
      { tick: 1, kind: 'PAIN', text: expect.stringContaining('consecutive failures: 1') },
    ]);
    expect(books.telemetry.drainEvents().map((e) => e.attributes['starry.pain.code'])).toEqual(['EPERM']);
  });

  it('records an execution error that failed its activity like one returned as data', () => {
    const error = normalizedError({ code: 'EPERM', message: 'outside', source: 'fs.read' });
    const [thrown, returned] = [turnOf(), turnOf()];
    for (const { turn, books } of [thrown, returned]) {
      const step = turn.before(books, read('c1'), calm);
      if (!step.run) throw new Error('not run');
      if (books === thrown.books)
        expect(turn.failed(books, step.pending, { error, retriesExhausted: false })).toBeUndefined();
      else turn.after(books, step.pending, failure(error));
    }
    expect(thrown.books.checkpoint).toEqual(returned.books.checkpoint);
  });

  it('gives a transient failure whose retries ran out the retry history, and ends the run on a fatal one', () => {
    const { turn, books } = turnOf();
    const [a, b] = [turn.before(books, read('c1'), calm), turn.before(books, read('c2'), calm)];
    if (!a.run || !b.run) throw new Error('not run');
    const reset = normalizedError({ code: 'ECONNRESET', message: 'hang up', source: 'fs.read' });
    expect(turn.failed(books, a.pending, { error: reset, retriesExhausted: true })).toBeUndefined();
    expect(books.checkpoint.toolCalls[0]?.error).toMatchObject({
      kind: 'execution',
      suggestion: expect.stringContaining('Tried 5 times'),
    });
    const oom = normalizedError({ code: 'ENOMEM', message: 'out of memory', source: 'fs.read' });
    expect(turn.failed(books, b.pending, { error: oom, retriesExhausted: false })).toMatchObject({
      outcome: 'FAILED',
      agentState: 'ERROR_PAUSED',
      lock: { reason: { code: 'FATAL' } },
    });
    expect(books.counters.data.lastErrorCode).toBe('ENOMEM');
  });

  it('records a call a halt cancelled while it ran as skipped, and skips the rest of the turn', () => {
    const { turn, books } = turnOf();
    const step = turn.before(books, read('c1'), calm);
    if (!step.run) throw new Error('not run');
    turn.cancelled(books, step.pending);
    expect(books.checkpoint.toolCalls[0]?.error?.message).toBe('SYSTEM_HALT: cancelled while running');
    expect(turn.end(books.checkpoint, true)).toMatchObject({ outcome: 'CANCELLED' });
  });
});

describe("Turn: the breakers' verdict", () => {
  it('skips the rest of the turn after a frustration intervention', () => {
    const { turn, books } = turnOf({ safety: { frustrationThreshold: 2 } });
    expect(runAll(turn, books, [bad('1', 'a'), bad('2', 'b'), read('3')])).toEqual([false, false, false]);
    expect(statuses(books)).toEqual(['failed', 'failed', 'skipped']);
    expect(books.checkpoint.toolCalls[2]?.error?.message).toBe(
      'frustration intervention: the rest of this turn was skipped',
    );
  });

  it('locks on the 4th identical failure, skips the rest, and suspends the run when the turn ends', () => {
    const { turn, books } = turnOf();
    runAll(turn, books, [bad('1'), bad('2'), bad('3'), bad('4'), read('5')]);
    expect(statuses(books)).toEqual(['failed', 'failed', 'failed', 'failed', 'skipped']);
    expect(turn.data.lock?.reason.code).toBe('REPEATED_FAILURE');
    expect(turn.end(books.checkpoint, false)).toMatchObject({ outcome: 'SUSPENDED', agentState: 'SAFETY_LOCKOUT' });
  });

  it('injects the alerts after the tool results when the turn ends, frustration first', () => {
    const { turn, books } = turnOf();
    runAll(turn, books, [bad('1'), bad('2'), bad('3'), bad('4', 'b'), bad('5', 'c')]);
    expect(books.checkpoint.messages.at(-1)?.role).toBe('tool');
    expect(turn.end(books.checkpoint, false)).toBeUndefined();
    expect(books.checkpoint.injections.slice(-2).map((i) => i.kind)).toEqual(['FRUSTRATION', 'REPEAT_ALERT']);
    expect(books.checkpoint.messages.slice(-2).map((m) => m.role)).toEqual(['user', 'user']);
  });

  it('serializes and deserializes: a copy of a stopped turn skips and suspends like the original', () => {
    const { turn, books } = turnOf();
    runAll(turn, books, [bad('1'), bad('2'), bad('3'), bad('4')]);
    const copy = new Turn(roundTrip(turn.data));
    expect(copy.before(books, read('5'), calm)).toEqual({ run: false });
    expect(books.checkpoint.toolCalls.at(-1)?.status).toBe('skipped');
    expect(copy.end(books.checkpoint, false)).toEqual(turn.end(checkpointOf(), false));
  });
});
