import { checkpointOf, configOf, textOf } from './test-support';
import { askVerification, finalAnswer, verifying } from './verify';

describe('the verification round', () => {
  it('asks once a task, at the tick of the first final answer, with the goal in the question', () => {
    const cp = checkpointOf();
    cp.ticks = 4;
    expect(askVerification(cp, true, 'read notes.md')).toBe(true);
    expect(cp.injections).toEqual([{ tick: 4, kind: 'VERIFY', text: expect.stringContaining('read notes.md') }]);
    expect(textOf(cp.messages.at(-1))).toMatch(/^VERIFY: /);
    expect(askVerification(cp, true, 'read notes.md')).toBe(false);
    expect(cp.injections).toHaveLength(1);
  });

  it('is not asked when the config turns it off', () => {
    const cp = checkpointOf();
    expect(askVerification(cp, false, 'g')).toBe(false);
    expect(cp.injections).toEqual([]);
    expect(cp.verifyAsked).toBe(false);
  });

  it('is under way from the question until the next tick, and not once anything else was injected', () => {
    const cp = checkpointOf();
    expect(verifying(cp)).toBe(false);
    askVerification(cp, true, 'g');
    expect(verifying(cp)).toBe(true);
    cp.ticks++;
    expect(verifying(cp)).toBe(false);
    cp.ticks--;
    cp.injections.push({ tick: cp.ticks, kind: 'MESSAGE', text: 'm' });
    expect(verifying(cp)).toBe(false);
  });

  it('completes the task with the answer once verified, or at once when verification is off', () => {
    const cp = checkpointOf();
    const input = { config: configOf(), goal: 'g' };
    expect(finalAnswer(cp, input, 'done')).toEqual({ verify: true });
    expect(finalAnswer(cp, input, 'verified')).toEqual({
      end: { outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', finalText: 'verified' },
    });
    const off = { config: configOf({ verify: false }), goal: 'g' };
    expect(finalAnswer(checkpointOf(), off, undefined)).toEqual({
      end: { outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT' },
    });
  });
});
