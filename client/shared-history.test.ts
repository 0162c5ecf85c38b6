import type { HistoryItem } from './history';
import { newTo, positionOf, tailAfter } from './shared-history';

/** An event `id` of the run `runId` that started at `runStart`. */
const item = (runId: string, runStart: number, id: number): HistoryItem =>
  ({ runId, runStart, event: { eventId: id } }) as unknown as HistoryItem;

describe('newTo: what of the follower a stream takes after its own read', () => {
  const read = positionOf(item('r1', 1000, 12));

  it('takes everything when the stream has read nothing', () => {
    expect(newTo(undefined, item('r1', 1000, 1))).toBe(true);
  });

  it('leaves out what its read had, and takes what follows, in the same run and in later runs', () => {
    expect(newTo(read, item('r1', 1000, 11))).toBe(false);
    expect(newTo(read, item('r1', 1000, 12))).toBe(false);
    expect(newTo(read, item('r1', 1000, 13))).toBe(true);
    expect(newTo(read, item('r2', 2000, 1))).toBe(true);
  });

  it('leaves out an earlier run whatever its event ids', () => {
    expect(newTo(read, item('r0', 500, 900))).toBe(false);
  });
});

describe('tailAfter: what a new follower passes on', () => {
  const described = { runId: 'r1', length: 40 };

  it('keeps back what was recorded when it described the workflow: the streams read that themselves', () => {
    expect(tailAfter(described, item('r1', 1000, 1))).toBe(false);
    expect(tailAfter(described, item('r1', 1000, 40))).toBe(false);
  });

  it('passes on what was written after, and every event of a later run', () => {
    expect(tailAfter(described, item('r1', 1000, 41))).toBe(true);
    expect(tailAfter(described, item('r2', 2000, 1))).toBe(true);
  });
});
