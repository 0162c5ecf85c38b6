import { SUMMARY_MAX_TOKENS } from '../context-summary';
import { normalizedError } from '../errors';
import type { TaskCheckpoint } from '../types';
import { storedSummary, summaryFailed, summaryRequest, summaryWritten, type SummaryFacts } from './summary';
import { checkpointOf, configOf } from './test-support';

/** A store-mode checkpoint: the head, then three turns (answer, result) since the last call's window opened at 2. */
function checkpoint(): TaskCheckpoint {
  const cp = checkpointOf();
  for (let n = 1; n <= 3; n++)
    cp.messages.push(
      { role: 'assistant', ref: `answer-${n}`, bytes: 300 },
      { role: 'tool', ref: `result-${n}`, bytes: 1000 },
    );
  cp.sent = { ref: 'manifest-3', from: 2, to: cp.messages.length };
  cp.ticks = 4;
  cp.callNumber = 3;
  return cp;
}
const facts = (over: Partial<SummaryFacts> = {}): SummaryFacts => ({
  config: configOf(),
  input: { agentId: 'a1', taskId: 'task-1' },
  planned: { start: 6, summarize: true }, // the window drops the first two turns
  maxOutputTokens: 8192,
  roomAfterHead: 40_000,
  ...over,
});
const summary = { message: { role: 'user' as const, ref: 'summary-1', bytes: 400 }, record: 'record-1' };

describe('the summary request', () => {
  it('covers the turns the window drops, by transcript position and by call, before the next call', () => {
    const request = summaryRequest(checkpoint(), facts());
    expect(request).toMatchObject({ agentId: 'a1', taskId: 'task-1', tick: 4, callNumber: 4 });
    expect(request.entries.map((m) => ('ref' in m ? m.ref : m.text))).toEqual([
      'answer-1',
      'result-1',
      'answer-2',
      'result-2',
    ]);
    expect(request.covers).toEqual({ entries: [2, 6], calls: [1, 2] });
    expect(request.previous).toBeUndefined();
  });

  it('counts from the task’s start what earlier windows already left out, and replaces the earlier summary too', () => {
    const cp = checkpoint();
    cp.trimmed = { entries: 10, calls: 5 };
    cp.summary = { ...summary, covers: { entries: [2, 12], calls: [1, 5] }, sent: true };
    const request = summaryRequest(cp, facts());
    expect(request.covers).toEqual({ entries: [2, 16], calls: [1, 7] });
    expect(request.previous).toEqual({ ...summary, covers: { entries: [2, 12], calls: [1, 5] } });
  });

  it('caps its output at a quarter of the room after the head, the summary cap and the budget, at least 1', () => {
    expect(summaryRequest(checkpoint(), facts()).maxOutputTokens).toBe(SUMMARY_MAX_TOKENS);
    expect(summaryRequest(checkpoint(), facts({ roomAfterHead: 2000 })).maxOutputTokens).toBe(500);
    expect(summaryRequest(checkpoint(), facts({ maxOutputTokens: 100 })).maxOutputTokens).toBe(100);
    expect(summaryRequest(checkpoint(), facts({ roomAfterHead: 2 })).maxOutputTokens).toBe(1);
  });
});

describe('the summary written, or not', () => {
  it('takes the place of the dropped turns, not yet sent, and the injections say what it covers', () => {
    const cp = checkpoint();
    const covers = { entries: [2, 6] as [number, number], calls: [1, 2] as [number, number] };
    summaryWritten(cp, {
      summary: { ...summary, covers },
      text: 'Read notes.md twice.',
      usage: { inputTokens: 1, outputTokens: 1 },
    });
    expect(cp.summary).toEqual({ ...summary, covers });
    expect(cp.injections).toEqual([{ tick: 4, kind: 'SUMMARY', text: 'Summary of calls 1–2: Read notes.md twice.' }]);
  });

  it('says in the injections which calls left the context without one when the summary call failed', () => {
    const cp = checkpoint();
    const error = normalizedError({ code: 'E_UNAVAILABLE', kind: 'transient', source: 'llm openai', message: '503' });
    summaryFailed(cp, error, summaryRequest(cp, facts()));
    expect(cp.injections.at(-1)?.text).toBe(
      'No summary of calls 1–2: the summary call failed (E_UNAVAILABLE: 503); they left the context without one.',
    );
    expect(cp.summary).toBeUndefined();
  });

  it('is carried by a delta or a request without the checkpoint’s own bookkeeping', () => {
    const covers = { entries: [2, 6] as [number, number], calls: [1, 2] as [number, number] };
    expect(storedSummary({ ...summary, covers, sent: true })).toEqual({ ...summary, covers });
  });
});
