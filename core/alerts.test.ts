import { approvalAlert, lockoutAlert, type LockedAgent } from './alerts';
import type { LockReason } from './types';

const reason = (code: LockReason['code'], message = `${code} happened`): LockReason => ({ code, message });
const suspended = { task: { taskId: 'task-1' } };
const agent = (over: Partial<LockedAgent>): LockedAgent => ({ agentId: 'a1', agentState: 'SAFETY_LOCKOUT', ...over });

describe('lockoutAlert', () => {
  it.each([
    ['LOOP_CAP', 'SAFETY_LOCKOUT'],
    ['REPEATED_FAILURE', 'SAFETY_LOCKOUT'],
    ['HISTORY_LIMIT', 'SAFETY_LOCKOUT'],
  ] as const)(
    'pages a %s lockout as a warning, with its reason and the command that resumes the suspended task',
    (code, agentState) => {
      const r = reason(code);
      expect(lockoutAlert(agent({ agentState, reason: r, suspended }))).toEqual({
        kind: 'lockout',
        severity: 'warning',
        agentState,
        reason: r,
        command: 'starry unlock a1 --resume',
        action:
          'Look at why it locked, then `starry unlock a1 --resume` continues the task with a fresh allowance ' +
          '(plain `starry unlock a1` ends the suspended task ABORTED).',
      });
    },
  );

  it('pages a budget stop as a warning whose command adds tokens and resumes the task', () => {
    const notice = lockoutAlert(agent({ agentState: 'STOPPED', reason: reason('BUDGET_EXHAUSTED'), suspended }));
    expect(notice).toMatchObject({
      kind: 'lockout',
      severity: 'warning',
      agentState: 'STOPPED',
      reason: { code: 'BUDGET_EXHAUSTED' },
      command: 'starry unlock a1 --resume --add-tokens N',
    });
    expect(notice?.action).toBe(
      'The agent used its token budget: `starry unlock a1 --resume --add-tokens N` adds N tokens and continues the task ' +
        '(plain `starry unlock a1` ends the suspended task ABORTED).',
    );
  });

  it('pages ERROR_PAUSED as critical: a fatal error (its task failed, nothing to resume) and an error cascade (suspended)', () => {
    const fatal = lockoutAlert(agent({ agentState: 'ERROR_PAUSED', reason: reason('FATAL', 'E_AUTH: HTTP 401') }));
    expect(fatal).toMatchObject({ kind: 'lockout', severity: 'critical', command: 'starry unlock a1' });
    expect(fatal?.action).toBe(
      "Fix the cause named in the reason (credentials, config, the worker, the tools' environment), then `starry unlock a1`.",
    );
    const cascade = lockoutAlert(agent({ agentState: 'ERROR_PAUSED', reason: reason('ERROR_CASCADE'), suspended }));
    expect(cascade).toMatchObject({ severity: 'critical', command: 'starry unlock a1 --resume' });
    expect(cascade?.action).toContain('(plain `starry unlock a1` ends the suspended task ABORTED)');
  });

  it('names the unlock without --resume when no task is suspended', () => {
    expect(lockoutAlert(agent({ reason: reason('LOOP_CAP') }))).toMatchObject({
      command: 'starry unlock a1',
      action: 'Look at why it locked, then `starry unlock a1` lets it take tasks again.',
    });
    expect(lockoutAlert(agent({ agentState: 'STOPPED', reason: reason('BUDGET_EXHAUSTED') }))?.command).toBe(
      'starry unlock a1 --add-tokens N',
    );
  });

  it('tells an admin to raise a spent shared budget, then resume', () => {
    expect(
      lockoutAlert(agent({ agentState: 'STOPPED', reason: reason('SHARED_BUDGET_EXHAUSTED'), suspended })),
    ).toMatchObject({
      severity: 'warning',
      command: 'starry unlock a1 --resume',
      action: expect.stringContaining('`starry budget raise <name> --tokens N`'),
    });
  });

  it('does not page a SYSTEM_HALT: a human stopped the agent and knows', () => {
    expect(lockoutAlert(agent({ agentState: 'STOPPED', reason: reason('SYSTEM_HALT'), suspended }))).toBeUndefined();
  });

  it('does not page an agent that is not locked, or locked without a reason', () => {
    expect(lockoutAlert(agent({ agentState: 'WAITING_FOR_EVENT', reason: reason('LOOP_CAP') }))).toBeUndefined();
    expect(lockoutAlert(agent({ agentState: 'EXECUTING' }))).toBeUndefined();
    expect(lockoutAlert(agent({ agentState: 'SAFETY_LOCKOUT' }))).toBeUndefined();
  });
});

describe('approvalAlert', () => {
  it('names the waiting call, its rule and deadline, and the commands that approve and deny it', () => {
    const notice = approvalAlert('a1', {
      callId: 't3.1',
      taskId: 'task-2',
      workflowId: 'agent-a1-task-2',
      tool: 'shell.run',
      args: { command: 'make deploy' },
      tick: 3,
      rule: 'shell.run',
      from: 'worker',
      askedAt: '2026-01-01T00:00:00.000Z',
      expiresAt: '2026-01-02T00:00:00.000Z',
    });
    expect(notice).toEqual({
      kind: 'approval',
      severity: 'warning',
      agentState: 'WAITING_FOR_APPROVAL',
      reason: {
        code: 'APPROVAL',
        message:
          'shell.run {"command":"make deploy"} waits for approval (call t3.1 of task-2, rule shell.run of the worker\'s policy)',
      },
      command: 'starry approve a1 t3.1',
      action:
        'Approve it with `starry approve a1 t3.1` (--args to edit its arguments) or deny it with `starry deny a1 t3.1 --reason "…"` before 2026-01-02T00:00:00.000Z; after that it counts as denied.',
    });
  });
});
