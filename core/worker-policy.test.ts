import { isRequestError } from './request-errors';
import { narrowToPolicy, normalizePosix, parseWorkerPolicy, type TaskLimits } from './worker-policy';

const policy = parseWorkerPolicy({ roots: ['/srv/ws/'], shellAllow: ['ls', 'cat'], httpAllow: ['*.example.com', 'api.test:8443', 'local.test:*'], maxOutputBytes: 1000 });
const task = (over: Partial<TaskLimits['tools']> & { workspace?: string[] } = {}): TaskLimits => ({
  workspace: over.workspace ?? ['/srv/ws/a'],
  tools: { shellAllow: over.shellAllow ?? ['ls'], httpAllow: over.httpAllow ?? [], maxOutputBytes: over.maxOutputBytes ?? 500 },
});
const refusal = (t: TaskLimits): string => {
  try {
    narrowToPolicy(policy, t);
  } catch (err) {
    expect(isRequestError(err) && err.type).toBe('Refused');
    return (err as Error).message;
  }
  throw new Error('not refused');
};

describe('worker policy', () => {
  it('accepts a task that narrows every limit', () => {
    const t = task({ httpAllow: ['docs.example.com', '*.a.example.com', 'api.test:8443', 'local.test', 'local.test:9000'] });
    expect(narrowToPolicy(policy, t)).toBe(t);
    expect(narrowToPolicy(policy, task({ workspace: ['/srv/ws'] }))).toBeDefined();
  });

  it.each([
    ['a root outside', task({ workspace: ['/etc'] }), 'workspace'],
    ['a sibling-prefix root', task({ workspace: ['/srv/ws-other'] }), 'workspace'],
    ['a root escaping by ..', task({ workspace: ['/srv/ws/../secret'] }), 'workspace'],
    ['a relative root', task({ workspace: ['ws'] }), 'workspace'],
    ['a command', task({ shellAllow: ['ls', 'sh'] }), "tools.shellAllow: 'sh'"],
    ['a host', task({ httpAllow: ['localhost'] }), "tools.httpAllow: 'localhost'"],
    ['a wider wildcard', task({ httpAllow: ['*.com'] }), "'*.com'"],
    ['another port', task({ httpAllow: ['api.test:8080'] }), "'api.test:8080'"],
    ['a port-wildcard lookalike', task({ httpAllow: ['local.test:*x'] }), "'local.test:*x'"],
    ['the output cap', task({ maxOutputBytes: 1001 }), 'tools.maxOutputBytes: 1001'],
  ])('refuses %s, naming the field', (_name, t, field) => {
    expect(refusal(t)).toContain(field);
  });

  it('names every wider field at once', () => {
    const message = refusal(task({ workspace: ['/'], shellAllow: ['sh'], maxOutputBytes: 5000 }));
    expect(message).toMatch(/workspace[\s\S]*shellAllow[\s\S]*maxOutputBytes/);
  });

  it('rejects an invalid policy with a ConfigError naming the field', () => {
    expect(() => parseWorkerPolicy({ roots: ['rel'] })).toThrow(/roots\.0: must be an absolute path/);
    expect(() => parseWorkerPolicy({ roots: [] })).toThrow(/roots: needs at least one root/);
    expect(() => parseWorkerPolicy({ roots: ['/a'], shell: [] })).toThrow(/Invalid worker policy/);
  });

  it('normalizes paths lexically', () => {
    expect(normalizePosix('/a/./b//c/../d/')).toBe('/a/b/d');
    expect(normalizePosix('/../..')).toBe('/');
  });
});
