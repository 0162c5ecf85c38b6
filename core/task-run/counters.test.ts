import { HISTORY_LIMITS } from '../safety-rungs';
import { RunCounters } from './counters';
import { checkpointOf, configOf, inputOf, roundTrip } from './test-support';
import { askVerification } from './verify';

const QUIET = { events: 10, bytes: 1000 };
const { safety } = configOf({ safety: { maxTicks: 2 } });
const fail = (fingerprint = 'f') => ({ toolName: 'fs.read', fingerprint, success: false });

describe('RunCounters', () => {
  it("starts the loop cap's allowance where the task starts or resumes, nothing omitted", () => {
    const cp = checkpointOf();
    cp.ticks = 7; // a suspended task's checkpoint, resumed
    expect(RunCounters.of(inputOf(), cp).data).toEqual({
      counters: inputOf().counters,
      allowanceStart: 7,
      omitted: { toolCalls: 0, injections: 0 },
    });
  });

  it('takes over what the run before it counted when the task continued as new', () => {
    const continued = {
      runTokens: 30,
      allowanceStart: 2,
      received: 1,
      lastErrorCode: 'EPERM',
      omitted: { toolCalls: 4, injections: 1 },
    };
    const cp = checkpointOf();
    cp.ticks = 9;
    expect(RunCounters.of(inputOf({}, { continued }), cp).data).toMatchObject({
      allowanceStart: 2,
      omitted: { toolCalls: 4, injections: 1 },
      lastErrorCode: 'EPERM',
    });
  });

  it('locks at the loop cap, counting the ticks since the allowance started', () => {
    const cp = checkpointOf();
    const counters = RunCounters.of(inputOf(), cp);
    cp.ticks = 2;
    expect(counters.tickLock(cp, safety, QUIET)).toMatchObject({
      lock: { agentState: 'SAFETY_LOCKOUT', reason: { code: 'LOOP_CAP' } },
      facts: { tick: 3 },
    });
    // A resumed task has a fresh allowance.
    expect(RunCounters.of(inputOf(), cp).tickLock(cp, safety, QUIET)).toBeUndefined();
  });

  it('does not count the verification round as a tick: a final answer at the last tick is verified', () => {
    const cp = checkpointOf();
    const counters = RunCounters.of(inputOf(), cp);
    cp.ticks = 2;
    askVerification(cp, true, 'g');
    expect(counters.tickLock(cp, safety, QUIET)).toBeUndefined();
  });

  it("locks near Temporal's history limits, with the history's size", () => {
    const cp = checkpointOf();
    const history = { events: HISTORY_LIMITS.events, bytes: 0 };
    expect(RunCounters.of(inputOf(), cp).tickLock(cp, safety, history)).toMatchObject({
      lock: { reason: { code: 'HISTORY_LIMIT' } },
      facts: { historyEvents: HISTORY_LIMITS.events },
    });
  });

  it("keeps the breakers' counters after each outcome, and returns their verdict", () => {
    const counters = RunCounters.of(inputOf(), checkpointOf());
    const { safety: defaults } = configOf();
    counters.afterTool(defaults, fail());
    counters.afterTool(defaults, fail());
    const third = counters.afterTool(defaults, fail());
    expect(third.alerts.map((a) => a.kind)).toEqual(['REPEAT_ALERT']);
    expect(counters.data.counters.consecutiveFailures).toBe(3);
    counters.afterTool(defaults, { ...fail(), success: true });
    expect(counters.data.counters.consecutiveFailures).toBe(0);
  });

  it('keeps the last error code, and adds up the records a run dropped', () => {
    const counters = RunCounters.of(inputOf(), checkpointOf());
    expect(counters.lastError()).toEqual({});
    counters.failedWith('EPERM');
    counters.failedWith('ENOENT');
    expect(counters.lastError()).toEqual({ lastErrorCode: 'ENOENT' });
    counters.omit({ toolCalls: 3, injections: 0 });
    counters.omit({ toolCalls: 2, injections: 1 });
    expect(counters.data.omitted).toEqual({ toolCalls: 5, injections: 1 });
  });

  it('serializes and deserializes: a copy locks where the original would', () => {
    const cp = checkpointOf();
    const counters = RunCounters.of(inputOf(), cp);
    counters.afterTool(safety, fail());
    const copy = new RunCounters(roundTrip(counters.data));
    expect(copy.data).toEqual(counters.data);
    cp.ticks = 2;
    expect(copy.tickLock(cp, safety, QUIET)).toEqual(counters.tickLock(cp, safety, QUIET));
  });
});
