import { kindOf } from './index';
import {
  classifyHttpStatus,
  classifyNetworkError,
  httpStatusCode,
  networkCodeOf,
  retryAfterMs,
  retryDelayWithin,
} from './http';

const h = (entries: Record<string, string>) => ({ get: (n: string) => entries[n.toLowerCase()] ?? null });

describe('httpStatusCode, the one HTTP-status table', () => {
  it.each([
    [408, 'ETIMEDOUT', 'ETIMEDOUT'],
    [409, 'E_UNAVAILABLE', 'E_UNAVAILABLE'],
    [429, 'E_RATE_LIMIT', 'E_RATE_LIMIT'],
    [500, 'E_UNAVAILABLE', 'E_UNAVAILABLE'],
    [599, 'E_UNAVAILABLE', 'E_UNAVAILABLE'],
    [401, 'E_AUTH', 'EACCES'],
    [403, 'E_AUTH', 'EACCES'],
    [404, 'ENOENT', 'ENOENT'],
    [410, 'ENOENT', 'ENOENT'],
    [400, 'EINVAL', 'EINVAL'],
    [422, 'EINVAL', 'EINVAL'],
  ])('maps HTTP %i to %s for the worker’s own request and %s for a URL the model chose', (status, worker, model) => {
    expect([httpStatusCode(status, 'worker'), httpStatusCode(status, 'model')]).toEqual([worker, model]);
  });

  it('retries what may clear up, stops the agent for the worker’s refused credential, and gives the model the rest as pain', () => {
    expect([408, 409, 429, 502].map((s) => kindOf(httpStatusCode(s, 'model')))).toEqual([
      'transient',
      'transient',
      'transient',
      'transient',
    ]);
    expect([kindOf(httpStatusCode(401, 'worker')), kindOf(httpStatusCode(401, 'model'))]).toEqual([
      'fatal',
      'execution',
    ]);
  });
});

describe('classifyHttpStatus', () => {
  it('gives the worker’s own request the table’s code and that code’s kind, with the status in the message', () => {
    for (const status of [400, 401, 403, 404, 408, 409, 410, 418, 429, 500, 503]) {
      const code = httpStatusCode(status, 'worker');
      const e = classifyHttpStatus({ status, message: 'x', source: 'llm' });
      expect(e).toMatchObject({
        code,
        kind: kindOf(code),
        source: 'llm',
        message: expect.stringContaining(`HTTP ${status}`),
      });
    }
  });

  it('tells which credential to check on 401', () => {
    expect(classifyHttpStatus({ status: 401, message: 'no', source: 'llm' }).suggestion).toMatch(/credential/);
  });

  it('names the credential in the message on 401 and 403, so the lock reason says which one is wrong', () => {
    const credential = 'the API key in OPENAI_API_KEY';
    const e401 = classifyHttpStatus({
      status: 401,
      message: 'Incorrect API key provided',
      source: 'llm openai',
      credential,
    });
    expect(e401.message).toBe('HTTP 401: Incorrect API key provided (the API key in OPENAI_API_KEY was rejected)');
    expect(e401.suggestion).toContain(credential);
    const e403 = classifyHttpStatus({ status: 403, message: 'Permission denied', source: 'llm gemini', credential });
    expect(e403.message).toContain('is not allowed to use this model');
    expect(classifyHttpStatus({ status: 429, message: 'slow', source: 's', credential }).message).toBe(
      'HTTP 429: slow',
    );
  });

  it('treats a credential the provider rejected in structured form as 401, keeping the real status', () => {
    const e = classifyHttpStatus({
      status: 400,
      message: 'API key not valid.',
      source: 'llm gemini',
      credential: 'the API key in GOOGLE_API_KEY',
      credentialRejected: true,
    });
    expect(e).toMatchObject({
      code: 'E_AUTH',
      kind: 'fatal',
      message: 'HTTP 400: API key not valid. (the API key in GOOGLE_API_KEY was rejected)',
    });
  });
});

describe('classifyNetworkError', () => {
  it('finds the code on the error or its cause', () => {
    expect(classifyNetworkError(Object.assign(new Error('x'), { code: 'ECONNRESET' }), 's')?.code).toBe('ECONNRESET');
    const fetchFailed = new TypeError('fetch failed', {
      cause: Object.assign(new Error('c'), { code: 'ECONNREFUSED' }),
    });
    expect(classifyNetworkError(fetchFailed, 's')).toMatchObject({ code: 'ECONNREFUSED', kind: 'transient' });
  });

  it('says a host that does not exist is ENOENT, which the model can fix, and a resolver that could not answer is transient', () => {
    const notFound = new TypeError('fetch failed', {
      cause: Object.assign(new Error('getaddrinfo ENOTFOUND nope.invalid'), { code: 'ENOTFOUND' }),
    });
    expect(classifyNetworkError(notFound, 's')).toMatchObject({ code: 'ENOENT', kind: 'execution' });
    expect(
      classifyNetworkError(Object.assign(new Error('getaddrinfo EAI_AGAIN'), { code: 'EAI_AGAIN' }), 's'),
    ).toMatchObject({ code: 'EAI_AGAIN', kind: 'transient' });
    expect(
      classifyNetworkError(Object.assign(new Error('timeout'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), 's'),
    ).toMatchObject({ code: 'ETIMEDOUT', kind: 'transient' });
  });

  it('returns undefined for an error that is not a network error', () => {
    expect(classifyNetworkError(new Error('boom'), 's')).toBeUndefined();
    expect(
      networkCodeOf(new Error('boom', { cause: Object.assign(new Error('reset'), { code: 'UND_ERR_SOCKET' }) })),
    ).toBe('ECONNRESET');
  });
});

describe('retryAfterMs', () => {
  it('reads seconds, milliseconds and HTTP dates', () => {
    expect(retryAfterMs(h({ 'retry-after': '2' }), 0)).toBe(2000);
    expect(retryAfterMs(h({ 'retry-after-ms': '150' }), 0)).toBe(150);
    expect(retryAfterMs(h({ 'retry-after': new Date(5000).toUTCString() }), 1000)).toBe(4000);
    expect(retryAfterMs(h({}), 0)).toBeUndefined();
    expect(retryAfterMs(h({ 'retry-after': 'soon' }), 0)).toBeUndefined();
    expect(retryAfterMs(h({ 'retry-after': new Date(0).toUTCString() }), 5000)).toBe(0);
  });
});

describe('retryDelayWithin', () => {
  it('keeps a Retry-After within the retry policy’s maximum interval', () => {
    expect(retryDelayWithin(3_600_000, 30_000)).toBe(30_000);
    expect(retryDelayWithin(2_000, 30_000)).toBe(2_000);
  });

  it('leaves the delay to the policy when the server gave none', () => {
    expect(retryDelayWithin(undefined, 30_000)).toBeUndefined();
  });
});
