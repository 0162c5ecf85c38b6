import {
  anyWaiting,
  checkDecision,
  forgetWaiting,
  KEPT_DECISIONS,
  listWaiting,
  newRunApprovals,
  recordDecision,
  type ApprovalsData,
} from './approvals';

const NOW = Date.parse('2026-01-01T00:01:00.000Z');
const waiting = (callId = 't1.0') => ({
  callId,
  taskId: 'task-1',
  workflowId: 'wf-task-1',
  tool: 'fs.write',
  args: { path: 'a.md', content: 'x' },
  tick: 1,
  rule: 'fs.write',
  from: 'config' as const,
  askedAt: '2026-01-01T00:00:00.000Z',
  expiresAt: '2026-01-02T00:00:00.000Z',
});
const report = (...calls: ReturnType<typeof waiting>[]) => ({ taskId: 'task-1', waiting: calls });

describe('agent approvals: the calls that wait for a human', () => {
  it('lists what the task reports waiting and returns only the calls newly waiting', () => {
    const d: ApprovalsData = {};
    expect(listWaiting(d, report(waiting('t1.0')))).toEqual([waiting('t1.0')]);
    expect(listWaiting(d, report(waiting('t1.0'), waiting('t1.1')))).toEqual([waiting('t1.1')]);
    expect(anyWaiting(d)).toBe(true);
    expect(listWaiting(d, report())).toEqual([]);
    expect(d.approvals).toBeUndefined();
    expect(anyWaiting(d)).toBe(false);
  });

  it('records a decision with who and when, and the call waits no longer', () => {
    const d: ApprovalsData = {};
    listWaiting(d, report(waiting('t1.0'), waiting('t1.1')));
    const args = { path: 'b.md', content: 'y' };
    expect(checkDecision(d, 'a1', { callId: 't1.0', decision: 'approve', args }, NOW)).toEqual(waiting('t1.0'));
    const decision = recordDecision(
      d,
      { callId: 't1.0', decision: 'approve', args, note: 'ok' },
      '2026-01-01T00:02:00Z',
    );
    expect(decision).toEqual({
      callId: 't1.0',
      decision: 'approve',
      by: 'a human approver',
      at: '2026-01-01T00:02:00Z',
      note: 'ok',
      args,
    });
    expect(d.approvals).toEqual([waiting('t1.1')]);
    // A report the task sent before the decision reached it does not list the call again.
    listWaiting(d, report(waiting('t1.0'), waiting('t1.1')));
    expect(d.approvals).toEqual([waiting('t1.1')]);
  });

  it('refuses a second decision by name (409), an unknown call (404), an expired call, and args that do not fit (400)', () => {
    const d: ApprovalsData = {};
    listWaiting(d, report(waiting('t1.0'), waiting('t1.1')));
    recordDecision(d, { callId: 't1.0', decision: 'deny', by: 'alice' }, 'noon');
    expect(() => checkDecision(d, 'a1', { callId: 't1.0', decision: 'approve' }, NOW)).toThrow(
      expect.objectContaining({
        type: 'Refused',
        message: 'call t1.0 of agent a1 was decided already: denied by alice at noon',
      }),
    );
    expect(() => checkDecision(d, 'a1', { callId: 't9.9', decision: 'approve' }, NOW)).toThrow(
      expect.objectContaining({
        type: 'NotFound',
        message: 'no call t9.9 of agent a1 waits for approval (waiting: t1.1); `starry approvals a1` lists them',
      }),
    );
    expect(() =>
      checkDecision(d, 'a1', { callId: 't1.1', decision: 'approve' }, Date.parse(waiting().expiresAt)),
    ).toThrow(
      expect.objectContaining({ type: 'Refused', message: expect.stringMatching(/expired at .* it counts as denied/) }),
    );
    expect(() => checkDecision(d, 'a1', { callId: 't1.1', decision: 'approve', args: { path: 7 } }, NOW)).toThrow(
      expect.objectContaining({
        type: 'InvalidArgument',
        message: expect.stringMatching(/^the edited arguments do not fit fs\.write/),
      }),
    );
    expect(() => checkDecision({}, 'a1', { callId: 't1.1', decision: 'approve' }, NOW)).toThrow(/\(none waits\)/);
  });

  it('remembers a bounded number of decisions, and a new run starts with none', () => {
    const d: ApprovalsData = {};
    const calls = Array.from({ length: KEPT_DECISIONS + 1 }, (_, i) => waiting(`t1.${i}`));
    listWaiting(d, report(...calls));
    for (const c of calls) recordDecision(d, { callId: c.callId, decision: 'deny' }, 'now');
    expect(d.decided).toHaveLength(KEPT_DECISIONS);
    expect(d.decided?.[0]?.callId).toBe('t1.1');
    expect(d.approvals).toBeUndefined();
    listWaiting(d, report(waiting('t2.0')));
    forgetWaiting(d);
    expect(d.approvals).toBeUndefined();
    expect(d.decided).toHaveLength(KEPT_DECISIONS);
    newRunApprovals(d);
    expect(d).toEqual({ approvals: undefined, decided: undefined });
  });

  it('is plain data that survives JSON, as continue-as-new carries it', () => {
    const d: ApprovalsData = {};
    listWaiting(d, report(waiting('t1.0'), waiting('t1.1')));
    recordDecision(d, { callId: 't1.0', decision: 'deny', reason: 'no' }, 'now');
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
  });
});
