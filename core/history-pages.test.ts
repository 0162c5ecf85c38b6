import {
  ALL_BATCHES,
  GRPC_MESSAGE_LIMIT,
  LARGEST_BATCH_BYTES,
  PAGE_BYTES,
  planPage,
  type RunExtent,
} from './history-pages';

const MiB = 1024 * 1024;
const closed = (bytes: number, events = 500): RunExtent => ({ bytes, events, closed: true });
const running = (bytes: number, events = 500): RunExtent => ({ bytes, events, closed: false });

describe('planPage: pages of a history under gRPC’s 4 MiB limit', () => {
  it('leaves room in a page for the answer’s framing and, while a run runs, for one batch it writes meanwhile', () => {
    expect(PAGE_BYTES).toBeLessThan(GRPC_MESSAGE_LIMIT);
    expect(PAGE_BYTES - LARGEST_BATCH_BYTES).toBeGreaterThan(MiB);
  });

  it('asks for the whole of a closed run that fits in a page, in one call', () => {
    expect(planPage(closed(3 * MiB), { bytes: 0, events: 0 })).toEqual({ batches: ALL_BATCHES });
  });

  it('reads a closed run larger than a page a batch at a time, then the rest at once when it fits', () => {
    const run = closed(30 * MiB);
    expect(planPage(run, { bytes: 0, events: 0 })).toEqual({ batches: 1 });
    expect(planPage(run, { bytes: 26 * MiB, events: 400 })).toEqual({ batches: 1 });
    expect(planPage(run, { bytes: 26.5 * MiB, events: 410 })).toEqual({ batches: ALL_BATCHES });
  });

  it('describes a running run again before asking for more than a batch of it, then asks for the events it knows', () => {
    const run = running(MiB, 300);
    expect(planPage(run, { bytes: 0, events: 0 })).toEqual({ describe: true });
    expect(planPage(run, { bytes: 0, events: 0 }, true)).toEqual({ batches: 300 });
    expect(planPage(run, { bytes: MiB / 2, events: 120 }, true)).toEqual({ batches: 180 });
  });

  it('reads a running run whose rest would not leave room for one more large batch a batch at a time', () => {
    expect(planPage(running(2 * MiB), { bytes: 0, events: 0 }, true)).toEqual({ batches: 1 });
  });

  it('follows the live tail, past what the description knew, a batch at a time', () => {
    expect(planPage(running(MiB, 300), { bytes: MiB, events: 300 })).toEqual({ batches: 1 });
    expect(planPage(closed(MiB, 300), { bytes: MiB, events: 300 })).toEqual({ batches: 1 });
  });

  it('asks for a batch at a time when the size is unknown (an older server, an undescribed run)', () => {
    expect(planPage(undefined, { bytes: 0, events: 0 })).toEqual({ batches: 1 });
    expect(planPage(closed(0), { bytes: 0, events: 0 })).toEqual({ batches: 1 });
  });
});
