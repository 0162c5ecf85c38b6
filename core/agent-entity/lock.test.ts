import { RefusedError } from '../errors';
import { LIMITS } from '../payloads';
import {
  enterExecuting,
  haltLock,
  lockAfterRun,
  notLocked,
  refuseWhileLocked,
  releaseLock,
  settleWaiting,
  type LockData,
} from './lock';

const waiting = (): LockData => ({ agentState: 'WAITING_FOR_EVENT', unlocks: [] });
const loopCap = { agentState: 'SAFETY_LOCKOUT' as const, reason: { code: 'LOOP_CAP' as const, message: 'loop cap' } };
const locked = (): LockData => ({ agentState: 'SAFETY_LOCKOUT', reason: loopCap.reason, unlocks: [] });

describe('agent lock: its state and the way out', () => {
  it('runs EXECUTING ⇄ WAITING_FOR_APPROVAL, and back to WAITING_FOR_EVENT when the run ends', () => {
    const d = waiting();
    enterExecuting(d);
    expect(d).toEqual({ agentState: 'EXECUTING', reason: undefined, unlocks: [] });
    settleWaiting(d, true);
    expect(d.agentState).toBe('WAITING_FOR_APPROVAL');
    settleWaiting(d, false);
    expect(d.agentState).toBe('EXECUTING');
    settleWaiting(d, true);
    lockAfterRun(d, undefined);
    expect(d.agentState).toBe('WAITING_FOR_EVENT');
    // Only a running agent waits for approval.
    settleWaiting(d, true);
    expect(d.agentState).toBe('WAITING_FOR_EVENT');
  });

  it('locks with the run’s verdict, except an agent a halt stopped first', () => {
    const d = waiting();
    enterExecuting(d);
    lockAfterRun(d, loopCap);
    expect(d).toMatchObject(loopCap);
    const halted = waiting();
    enterExecuting(halted);
    haltLock(halted, 'bob', 'runaway');
    lockAfterRun(halted, loopCap);
    expect(halted).toMatchObject({
      agentState: 'STOPPED',
      reason: { code: 'SYSTEM_HALT', message: 'SYSTEM_HALT by bob: runaway' },
    });
  });

  it('refuses tasks while locked, naming the state, the reason and the command that unlocks', () => {
    expect(() => refuseWhileLocked(waiting(), 'a1')).not.toThrow();
    expect(() => refuseWhileLocked(locked(), 'a1')).toThrow(RefusedError);
    expect(() => refuseWhileLocked(locked(), 'a1')).toThrow(
      'agent a1 is SAFETY_LOCKOUT (LOOP_CAP: loop cap) and refuses tasks until a human unlocks it: starry unlock a1',
    );
  });

  it('keeps a locked agent’s first reason when a halt comes, the halt beside it', () => {
    const d = locked();
    haltLock(d, 'ops');
    expect(d).toEqual({ ...locked(), halt: { by: 'ops' } });
  });

  it('records an unlock with who, from what and why, and leaves the lock with no reason and no halt', () => {
    const d = locked();
    haltLock(d, 'ops', 'stop');
    expect(releaseLock(d, { by: 'alice', note: 'fixed', resume: true, addTokens: 5 })).toEqual({
      from: 'SAFETY_LOCKOUT',
      reason: loopCap.reason,
    });
    expect(d).toEqual({
      agentState: 'WAITING_FOR_EVENT',
      reason: undefined,
      halt: undefined,
      unlocks: [
        { by: 'alice', note: 'fixed', from: 'SAFETY_LOCKOUT', reason: loopCap.reason, resume: true, addTokens: 5 },
      ],
    });
  });

  it('refuses a bad addTokens before recording anything, and keeps the newest unlocks', () => {
    const d = locked();
    expect(() => releaseLock(d, { addTokens: -1 })).toThrow('addTokens must be a whole number >= 0, got -1');
    expect(d).toEqual(locked());
    for (let i = 0; i < LIMITS.keptResults + 1; i++) {
      d.agentState = 'STOPPED';
      releaseLock(d, { by: `u${i}` });
    }
    expect(d.unlocks).toHaveLength(LIMITS.keptResults);
    expect(d.unlocks[0]).toMatchObject({ by: 'u1', from: 'STOPPED', resume: false, addTokens: 0 });
  });

  it('says an unlock of an agent that is not locked does nothing', () => {
    expect(notLocked(waiting(), 'a1')).toEqual({
      unlocked: false,
      agentState: 'WAITING_FOR_EVENT',
      message: 'agent a1 is not locked (WAITING_FOR_EVENT): nothing to unlock',
    });
  });

  it('is plain data that survives JSON, as continue-as-new carries it', () => {
    const d = locked();
    haltLock(d, 'ops', 'n');
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
  });
});
