import {
  approvalConfigSchema,
  approvalVerdict,
  deniedError,
  decisionInputSchema,
  formatWait,
  patternProblem,
} from './approval';
import { parseAgentConfig } from './config';
import { parseWorkerPolicy } from './worker-policy';

const rules = (r: unknown) => approvalConfigSchema().parse(r);

describe('approvalVerdict: which calls wait for a human', () => {
  it('asks for a named tool, a prefix.* and *, and lets every other call run', () => {
    const r = rules({ ask: ['shell.run', 'deploy.*'] });
    expect(approvalVerdict(r, undefined, 'shell.run', { command: 'ls' })).toEqual({
      verdict: 'ask',
      rule: 'shell.run',
      from: 'config',
    });
    expect(approvalVerdict(r, undefined, 'deploy.prod', {})).toMatchObject({ verdict: 'ask', rule: 'deploy.*' });
    expect(approvalVerdict(r, undefined, 'fs.read', { path: 'a' })).toEqual({ verdict: 'run' });
    expect(approvalVerdict(rules({ ask: ['*'] }), undefined, 'fs.read', {})).toMatchObject({ verdict: 'ask' });
  });

  it('matches a rule with arguments only when every named argument matches its regex', () => {
    const r = rules({ ask: [{ tool: 'fs.write', args: { path: '^src/' } }] });
    expect(approvalVerdict(r, undefined, 'fs.write', { path: 'src/a.ts', content: 'x' })).toEqual({
      verdict: 'ask',
      rule: 'fs.write {path: ^src/}',
      from: 'config',
    });
    expect(approvalVerdict(r, undefined, 'fs.write', { path: 'README.md' })).toEqual({ verdict: 'run' });
    expect(approvalVerdict(r, undefined, 'fs.write', {})).toEqual({ verdict: 'run' });
  });

  it('denies before it asks, and the worker’s rules hold whatever the config says', () => {
    const worker = parseWorkerPolicy({
      roots: ['/srv'],
      approval: { ask: ['shell.run'], deny: ['http.get'] },
    }).approval;
    expect(approvalVerdict(rules({ ask: ['http.get'] }), worker, 'http.get', {})).toEqual({
      verdict: 'deny',
      rule: 'http.get',
      from: 'worker',
    });
    // A config without rules (or with others) does not remove the worker's.
    expect(approvalVerdict(undefined, worker, 'shell.run', {})).toMatchObject({ verdict: 'ask', from: 'worker' });
    expect(approvalVerdict(rules({ deny: ['shell.run'] }), worker, 'shell.run', {})).toMatchObject({
      verdict: 'deny',
      from: 'config',
    });
  });
});

describe('the approval rules in a config', () => {
  it('default to a day of waiting and refuse what they cannot use, naming the field', () => {
    expect(parseAgentConfig({ tools: { approval: { ask: ['shell.run'] } } }, 'scripted:x').tools.approval).toEqual({
      ask: ['shell.run'],
      deny: [],
      timeoutMs: 86_400_000,
    });
    expect(() => parseAgentConfig({ tools: { approval: { ask: ['not a tool!'] } } }, 'scripted:x')).toThrow(
      /tools\.approval\.ask\.0.*not a tool name/s,
    );
    expect(() =>
      parseAgentConfig({ tools: { approval: { ask: [{ tool: 'fs.write', args: { path: '(' } }] } } }, 'scripted:x'),
    ).toThrow(/not a valid regular expression/);
    expect(() => parseAgentConfig({ tools: { approval: { timeoutMs: 10 } } }, 'scripted:x')).toThrow(
      /timeoutMs.*>= 1000/s,
    );
  });

  it('refuse a regex whose nested repetition could stall the workflow, and one too long', () => {
    expect(patternProblem('(a+)+$')).toMatch(/exponential/);
    expect(patternProblem('^src/.*\\.ts$')).toBeUndefined();
    expect(patternProblem('x'.repeat(201))).toMatch(/200 characters/);
  });
});

describe('a decision', () => {
  it('is checked: a call id, approve or deny, a bounded reason, args only to approve', () => {
    expect(decisionInputSchema().safeParse({ callId: 't3.0', decision: 'approve' }).success).toBe(true);
    expect(decisionInputSchema().safeParse({ callId: 'x', decision: 'approve' }).error?.message).toMatch(/t3\.0/);
    expect(decisionInputSchema().safeParse({ callId: 't3.0', decision: 'maybe' }).error?.message).toMatch(
      /approve.*deny/,
    );
    expect(
      decisionInputSchema().safeParse({ callId: 't3.0', decision: 'deny', reason: 'x'.repeat(1_000_000) }).error
        ?.message,
    ).toMatch(/at most 2000/);
    expect(
      decisionInputSchema().safeParse({ callId: 't3.0', decision: 'deny', args: { path: 'a' } }).error?.message,
    ).toMatch(/a denial takes none/);
  });

  it('denied or expired, is E_DENIED execution pain that carries who and why', () => {
    expect(deniedError('shell.run', { by: 'alice', reason: 'not on prod' })).toMatchObject({
      code: 'E_DENIED',
      kind: 'execution',
      source: 'shell.run',
      message: 'alice denied this shell.run call: not on prod',
    });
    expect(deniedError('shell.run', { expiredAfterMs: 90_000 }).message).toBe(
      'no decision within 90 s: this shell.run call was not run',
    );
    expect(deniedError('http.get', { rule: 'http.get', from: 'worker' }).message).toMatch(/worker's policy/);
    expect(formatWait(86_400_000)).toBe('24 h');
  });
});
