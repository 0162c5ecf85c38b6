import { isRequestError } from './request-errors';
import { isHostAllowed, llmSpecProblem, narrowToPolicy, normalizePosix, parseWorkerPolicy, type TaskLimits } from './worker-policy';

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

describe('isHostAllowed', () => {
  it.each([
    ['https://Example.com/x', 'example.com', true],
    ['https://evil-example.com/', 'example.com', false],
    ['http://localhost:8080/', 'localhost:8080', true],
    ['http://localhost:9090/', 'localhost:8080', false],
    // No port in the entry: the scheme's default port only.
    ['http://localhost:8233/', 'localhost', false],
    ['http://localhost/', 'localhost', true],
    ['https://localhost:443/', 'localhost', true],
    ['http://localhost/', 'localhost:80', true],
    ['https://a.example.com:8443/', '*.example.com', false],
    ['https://docs.example.com/', '*.example.com', true],
    ['https://example.com/', '*.example.com', false],
    // host:* is the host on any port, and nothing else.
    ['http://127.0.0.1:18997/v1', '127.0.0.1:*', true],
    ['http://127.0.0.1/v1', '127.0.0.1:*', true],
    ['http://127.0.0.2:80/v1', '127.0.0.1:*', false],
    ['http://[::1]:8000/v1', '[::1]:*', true],
    ['http://[::1]/v1', '[::1]', true],
  ])('%s against %s: %s', (url, entry, allowed) => {
    expect(isHostAllowed(new URL(url), [entry])).toBe(allowed);
  });
});

describe('the LLM endpoints and files a task may name', () => {
  const llmPolicy = parseWorkerPolicy({ roots: ['/srv/ws'], llmAllow: ['api.openai.com', 'vllm.internal:8000'], llmDirs: ['/srv/models'] });

  it('allows an OpenAI-compatible base URL on a host of llmAllow, and the worker\'s own endpoint', () => {
    expect(llmSpecProblem('openai:gpt-4o-mini@https://api.openai.com/v1', llmPolicy)).toBeUndefined();
    expect(llmSpecProblem('openai:qwen@http://vllm.internal:8000/v1', llmPolicy)).toBeUndefined();
    expect(llmSpecProblem('openai:gpt-4o-mini', llmPolicy)).toBeUndefined();
    expect(llmSpecProblem('gemini:gemini-2.5-flash', llmPolicy)).toBeUndefined();
  });

  it.each([
    ['a listener of the submitter\'s choosing', 'openai:gpt@http://127.0.0.1:18997/v1'],
    ['another port of an allowed host', 'openai:gpt@http://vllm.internal:8001/v1'],
    ['the cloud metadata service', 'openai:gpt@http://169.254.169.254/latest'],
    ['a lookalike host', 'openai:gpt@https://api.openai.com.evil.test/v1'],
    ['a fragment that names an allowed host', 'openai:gpt@https://evil.test/v1#api.openai.com'],
  ])('refuses %s, naming llmAllow', (_name, spec) => {
    expect(llmSpecProblem(spec, llmPolicy)).toMatch(/is not one the worker's LLM calls may reach \(llmAllow: api\.openai\.com, vllm\.internal:8000\)/);
  });

  it('allows scripts and models inside the roots and llmDirs only, by absolute path', () => {
    expect(llmSpecProblem('scripted:/srv/ws/a/turns.json', llmPolicy)).toBeUndefined();
    expect(llmSpecProblem('local:/srv/models/smol.gguf', llmPolicy)).toBeUndefined();
    expect(llmSpecProblem('scripted:/etc/starry/policy.json', llmPolicy)).toMatch(/the script '\/etc\/starry\/policy.json' is not an absolute path inside a directory the worker reads scripts from \(\/srv\/ws, \/srv\/models\)/);
    expect(llmSpecProblem('scripted:/srv/ws/../../etc/shadow', llmPolicy)).toMatch(/is not an absolute path inside/);
    expect(llmSpecProblem('scripted:turns.json', llmPolicy)).toMatch(/is not an absolute path inside/);
    expect(llmSpecProblem('local:/root/model.gguf', llmPolicy)).toMatch(/the model '\/root\/model.gguf'/);
  });

  it('refuses a task whose llm is wider than the policy at submit, with the other fields', () => {
    const message = refusalOf(llmPolicy, { ...task({ workspace: ['/srv/ws/a'] }), llm: 'openai:gpt@http://127.0.0.1:18997/v1' });
    expect(message).toContain("llm: the host of 'http://127.0.0.1:18997/v1' is not one");
  });
});

function refusalOf(p: ReturnType<typeof parseWorkerPolicy>, t: TaskLimits): string {
  try {
    narrowToPolicy(p, t);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('not refused');
}
