import { ERROR_CODES, failure, kindOf, normalizedError, success, toErrorCode } from './index';

describe('the error taxonomy', () => {
  it('gives every code one kind: transient codes are retried, fatal ones stop the agent, the rest are pain', () => {
    const byKind: Record<string, string[]> = {};
    for (const c of ERROR_CODES) (byKind[kindOf(c)] ??= []).push(c);
    expect(byKind.transient?.sort()).toEqual(
      ['E_RATE_LIMIT', 'E_UNAVAILABLE', 'EAI_AGAIN', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT'].sort(),
    );
    expect(byKind.fatal?.sort()).toEqual(['E_AUTH', 'E_BLOB_MISSING', 'E_INTERNAL', 'ENOMEM'].sort());
    expect(byKind.execution).toEqual(
      expect.arrayContaining([
        'EPERM',
        'ENOENT',
        'E_UNKNOWN_TOOL',
        'E_INVALID_JSON',
        'E_SCHEMA',
        'E_OUTPUT_TOO_LARGE',
        'E_LIMIT',
        'E_SKIPPED',
      ]),
    );
  });

  it('narrows an unknown code to a fallback, never passing a stranger through', () => {
    expect(toErrorCode('EPERM')).toBe('EPERM');
    expect(toErrorCode('EWHATEVER')).toBe('E_INTERNAL');
    expect(toErrorCode(42, 'EINVAL')).toBe('EINVAL');
  });

  it('builds a normalized error with the code’s own kind unless told otherwise, and a suggestion only when given', () => {
    expect(normalizedError({ code: 'ENOENT', message: 'no such file', source: 'fs.read' })).toEqual({
      code: 'ENOENT',
      message: 'no such file',
      source: 'fs.read',
      kind: 'execution',
    });
    expect(
      normalizedError({ code: 'ETIMEDOUT', message: 't', source: 's', kind: 'execution', suggestion: 'Tried 3 times' }),
    ).toEqual({
      code: 'ETIMEDOUT',
      message: 't',
      source: 's',
      kind: 'execution',
      suggestion: 'Tried 3 times',
    });
  });

  it('wraps outcomes in the seeds’ ToolExecutionResult', () => {
    const e = normalizedError({ code: 'EPERM', message: 'm', source: 'fs.read' });
    expect(failure(e)).toEqual({ success: false, error: e });
    expect(success({ n: 1 })).toEqual({ success: true, data: { n: 1 } });
  });
});
