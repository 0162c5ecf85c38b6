import { classifyHttpStatus, classifyNetworkError, retryAfterMs } from './provider-errors';

const h = (entries: Record<string, string>) => ({ get: (n: string) => entries[n.toLowerCase()] ?? null });

describe('classifyHttpStatus', () => {
  it.each([
    [429, 'E_RATE_LIMIT', 'transient'],
    [408, 'ETIMEDOUT', 'transient'],
    [409, 'E_UNAVAILABLE', 'transient'],
    [500, 'E_UNAVAILABLE', 'transient'],
    [503, 'E_UNAVAILABLE', 'transient'],
    [401, 'E_AUTH', 'fatal'],
    [403, 'E_AUTH', 'fatal'],
    [400, 'EINVAL', 'execution'],
    [404, 'ENOENT', 'execution'],
  ])('maps HTTP %i to %s (%s)', (status, code, kind) => {
    const e = classifyHttpStatus({ status, message: 'x', source: 'llm' });
    expect(e).toMatchObject({ code, kind, source: 'llm' });
    expect(e.message).toContain(`HTTP ${status}`);
  });

  it('tells which credential to check on 401', () => {
    expect(classifyHttpStatus({ status: 401, message: 'no', source: 'llm' }).suggestion).toMatch(/credential/);
  });
});

describe('classifyNetworkError', () => {
  it('finds the code on the error or its cause', () => {
    expect(classifyNetworkError(Object.assign(new Error('x'), { code: 'ECONNRESET' }), 's')?.code).toBe('ECONNRESET');
    const fetchFailed = new TypeError('fetch failed', { cause: Object.assign(new Error('c'), { code: 'ECONNREFUSED' }) });
    expect(classifyNetworkError(fetchFailed, 's')).toMatchObject({ code: 'ECONNREFUSED', kind: 'transient' });
  });

  it('returns undefined for an error that is not a network error', () => {
    expect(classifyNetworkError(new Error('boom'), 's')).toBeUndefined();
  });
});

describe('retryAfterMs', () => {
  it('reads seconds, milliseconds and HTTP dates', () => {
    expect(retryAfterMs(h({ 'retry-after': '2' }), 0)).toBe(2000);
    expect(retryAfterMs(h({ 'retry-after-ms': '150' }), 0)).toBe(150);
    expect(retryAfterMs(h({ 'retry-after': new Date(5000).toUTCString() }), 1000)).toBe(4000);
    expect(retryAfterMs(h({}), 0)).toBeUndefined();
  });
});
