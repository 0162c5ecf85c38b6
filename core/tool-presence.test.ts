import {
  afterUnpicked,
  presenceQueueOf,
  TOOL_CALL_BUSY_ROUNDS,
  TOOL_CALL_BUSY_WAIT_MS,
  TOOL_CALL_FIRST_WAIT_MS,
  TOOL_PRESENCE_PROBE_MS,
} from './tool-presence';

describe('a tool call no tool worker picked up', () => {
  it('fails at once when no tool worker process answers the presence probe, whatever the round', () => {
    expect(afterUnpicked(0, false)).toEqual({ fail: 'absent' });
    expect(afterUnpicked(3, false)).toEqual({ fail: 'absent' });
  });

  it('waits again, a minute at a time, while the fleet answers, then fails as busy', () => {
    for (let round = 0; round < TOOL_CALL_BUSY_ROUNDS; round++)
      expect(afterUnpicked(round, true)).toEqual({ wait: TOOL_CALL_BUSY_WAIT_MS });
    expect(afterUnpicked(TOOL_CALL_BUSY_ROUNDS, true)).toEqual({ fail: 'busy' });
  });

  it('knows a gone fleet within seconds: the first wait and the probe stay under 15 s together', () => {
    expect(TOOL_CALL_FIRST_WAIT_MS + TOOL_PRESENCE_PROBE_MS).toBeLessThanOrEqual(10_000);
  });

  it('asks the presence queue named after the tool queue', () => {
    expect(presenceQueueOf('openstarry-tools')).toBe('openstarry-tools-presence');
  });
});
