import { retryConfigSchema } from './config';
import { normalizedError } from './errors';
import {
  frustrationFirst,
  MAX_RESULT_CHARS,
  retryHistory,
  skippedText,
  toolResultText,
  verifyText,
} from './transcript';

describe('transcript texts', () => {
  it('renders data as JSON and strings as they are', () => {
    expect(toolResultText({ a: 1 })).toBe('{"a":1}');
    expect(toolResultText('plain')).toBe('plain');
  });

  it('cuts results longer than the limit and says so', () => {
    const text = toolResultText('x'.repeat(MAX_RESULT_CHARS + 10));
    expect(text).toMatch(/cut at 16000 characters/);
  });

  it('says a skipped call was not executed and why', () => {
    expect(skippedText('frustration intervention')).toBe('Not executed: frustration intervention.');
  });

  it('repeats the goal in the verification request', () => {
    expect(verifyText('write hello.txt')).toContain('write hello.txt');
  });

  it('gives the retry policy and the last error when retries ran out', () => {
    const e = normalizedError({ code: 'ECONNRESET', message: 'socket hang up', source: 'http.get' });
    const text = retryHistory(e, retryConfigSchema().parse({}), true);
    expect(text).toBe(
      'Tried 5 times with exponential backoff (1s, x2, max 30s); still ECONNRESET: socket hang up. The resource looks unavailable: try a different approach, or finish without it.',
    );
  });
});

describe('frustrationFirst', () => {
  it('puts the frustration of a later call before the repeat alert of an earlier one, keeping the rest in order', () => {
    const turn = [
      { kind: 'REPEAT_ALERT', call: 3 },
      { kind: 'ERROR_CASCADE', call: 4 },
      { kind: 'FRUSTRATION', call: 5 },
    ];
    expect(frustrationFirst(turn).map((a) => a.call)).toEqual([5, 3, 4]);
  });
});
