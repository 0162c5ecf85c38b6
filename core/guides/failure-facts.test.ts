import { normalizedError } from '../errors';
import {
  codeAndMessage,
  countOf,
  describeFailure,
  lines,
  REPEAT_ALERT_SENTENCE,
  suggestionLine,
} from './failure-facts';

const eperm = normalizedError({ code: 'EPERM', message: 'operation not permitted', source: 'fs.read' });

describe('failure facts', () => {
  it('keeps the seeds repeat alert sentence verbatim', () => {
    expect(REPEAT_ALERT_SENTENCE).toBe('SYSTEM ALERT: You are repeating a failed action. STOP and analyze why.');
  });

  it('states tool, code, message and source in one sentence', () => {
    expect(describeFailure(eperm, { toolName: 'fs.read' })).toBe(
      'Tool fs.read failed: EPERM: operation not permitted (source fs.read).',
    );
  });

  it('says a skipped call was not executed rather than that it failed', () => {
    const skipped = normalizedError({ code: 'E_SKIPPED', message: 'turn stopped', source: 'safety' });
    expect(describeFailure(skipped, { toolName: 'fs.list' })).toBe(
      'Tool fs.list was not executed: E_SKIPPED: turn stopped (source safety).',
    );
  });

  it('gives a suggestion line only when the Core has a suggestion', () => {
    expect(suggestionLine(eperm)).toBeUndefined();
    expect(suggestionLine({ ...eperm, suggestion: '' })).toBeUndefined();
    expect(suggestionLine({ ...eperm, suggestion: 'Use /w' })).toBe('Suggestion: Use /w');
  });

  it('puts the noun in the right number', () => {
    expect(countOf(1, 'failure')).toBe('1 failure');
    expect(countOf(5, 'failure')).toBe('5 failures');
  });

  it('joins lines and drops the absent ones but keeps deliberate blank lines', () => {
    expect(lines('a', undefined, '', 'b')).toBe('a\n\nb');
  });
});

describe('codeAndMessage', () => {
  it('does not repeat a code the message already starts with', () => {
    expect(codeAndMessage({ code: 'EPERM', message: 'EPERM: operation not permitted' })).toBe(
      'EPERM: operation not permitted',
    );
  });

  it('prefixes the code otherwise', () => {
    expect(codeAndMessage({ code: 'ENOENT', message: 'no such file' })).toBe('ENOENT: no such file');
  });
});
