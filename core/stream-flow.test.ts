import { flowCheckEveryMs, readerAfter, readerStalled, type ReaderState } from './stream-flow';

const after = (r: ReaderState | undefined, written: number, waiting: number, at: number) =>
  readerAfter(r, { written, waiting, at });

describe('a stream’s reader: does it take what is written to it', () => {
  it('is stalled once it has taken nothing for slowMs while bytes wait for it', () => {
    let r = after(undefined, 100, 0, 0);
    r = after(r, 9_000, 8_900, 10_000);
    r = after(r, 9_015, 8_915, 20_000);
    expect(readerStalled(r, 29_999, 30_000)).toBe(false);
    expect(readerStalled(r, 30_000, 30_000)).toBe(true);
  });

  it('is not stalled while it takes something, however slowly', () => {
    let r = after(undefined, 0, 0, 0);
    for (let t = 1; t <= 10; t++) r = after(r, 100_000, 100_000 - t * 100, t * 10_000);
    expect(readerStalled(r, 100_000, 30_000)).toBe(false);
  });

  it('is not stalled when it has everything, however long nothing is written', () => {
    let r = after(undefined, 50, 0, 0);
    r = after(r, 65, 0, 40_000);
    expect(readerStalled(r, 40_000, 30_000)).toBe(false);
  });

  it('looks at the socket a few times within slowMs, at most every 5 s', () => {
    expect(flowCheckEveryMs(30_000)).toBe(5_000);
    expect(flowCheckEveryMs(400)).toBe(100);
  });
});
