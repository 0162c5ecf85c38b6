import { ToolError, normalizeThrown, toToolError } from './activity';

const nodeError = (code: string, message = `${code}: something, open '/x'`) =>
  Object.assign(new Error(message), { code });

describe('normalizeThrown', () => {
  it('keeps the NormalizedError of a ToolError', () => {
    const err = ToolError.of({ code: 'EPERM', message: 'no', source: 'fs.read' });
    expect(normalizeThrown(err, 'other')).toBe(err.error);
  });

  it('keeps a Node code of the taxonomy, with its kind, and names what the model asked for', () => {
    expect(normalizeThrown(nodeError('ENOENT'), 'fs.read', 'a.txt')).toEqual({
      code: 'ENOENT',
      kind: 'execution',
      source: 'fs.read',
      message: `ENOENT: no such file or directory, 'a.txt'`,
    });
    expect(normalizeThrown(nodeError('ECONNRESET'), 'http.get').kind).toBe('transient');
  });

  it('maps Node codes outside the taxonomy to the nearest one', () => {
    expect(normalizeThrown(nodeError('ELOOP'), 'fs.read', 'l')).toMatchObject({ code: 'EINVAL', kind: 'execution' });
    expect(normalizeThrown(nodeError('EROFS'), 'fs.write', 'f')).toMatchObject({ code: 'EACCES', kind: 'execution' });
    expect(normalizeThrown(nodeError('EMFILE'), 'fs.read', 'f')).toMatchObject({
      code: 'E_UNAVAILABLE',
      kind: 'transient',
    });
  });

  it('treats a full disk as fatal: only an operator can fix it', () => {
    expect(normalizeThrown(nodeError('ENOSPC'), 'fs.write', 'f')).toMatchObject({ code: 'E_INTERNAL', kind: 'fatal' });
  });

  it('reports an unmodelled system error as E_INTERNAL pain, keeping its code in the message', () => {
    const error = normalizeThrown(nodeError('EXDEV', 'EXDEV: cross-device link not permitted'), 'fs.write', 'f');
    expect(error).toMatchObject({ code: 'E_INTERNAL', kind: 'execution' });
    expect(error.message).toContain('EXDEV');
  });

  it('reports an error without a code as a fatal E_INTERNAL: an invariant broke', () => {
    expect(normalizeThrown(new TypeError('x is undefined'), 'fs.read')).toMatchObject({
      code: 'E_INTERNAL',
      kind: 'fatal',
      message: 'Internal error in fs.read: x is undefined',
    });
  });
});

describe('ToolError', () => {
  it('is recognised by its marker and keeps the cause', () => {
    const cause = nodeError('ENOENT');
    const err = toToolError(cause, 'fs.read', 'a.txt');
    expect(ToolError.is(err)).toBe(true);
    expect(ToolError.is(cause)).toBe(false);
    expect(err.cause).toBe(cause);
    expect(err.message).toBe(err.error.message);
  });
});
