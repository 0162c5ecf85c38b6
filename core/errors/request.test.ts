import {
  ConfigError,
  InvalidArgumentError,
  isRequestError,
  NotFoundError,
  RefusedError,
  requestErrorType,
} from './request';

describe('the request error family', () => {
  it('gives each error the type a client maps to a status', () => {
    expect(new InvalidArgumentError('bad').type).toBe('InvalidArgument');
    expect(new ConfigError('bad config').type).toBe('InvalidArgument');
    expect(new RefusedError('locked').type).toBe('Refused');
    expect(new NotFoundError('no agent').type).toBe('NotFound');
  });

  it('keeps the cause and the issues', () => {
    const cause = new Error('root');
    const e = new InvalidArgumentError('bad', { cause, issues: ['goal: required'] });
    expect(e.cause).toBe(cause);
    expect(e.issues).toEqual(['goal: required']);
    expect(new RefusedError('x').issues).toEqual([]);
  });

  it('recognises members by marker, not by instanceof, and nothing else', () => {
    const copy = Object.assign(new Error('from another realm'), { [Symbol.for('openstarry.RequestError')]: true });
    expect(isRequestError(copy)).toBe(true);
    expect(isRequestError(new ConfigError('x'))).toBe(true);
    expect(isRequestError(new Error('plain'))).toBe(false);
    expect(isRequestError('InvalidArgument')).toBe(false);
  });

  it('narrows failure types read back from Temporal', () => {
    expect(requestErrorType('Refused')).toBe('Refused');
    expect(requestErrorType('TaskFailed')).toBeUndefined();
  });
});
