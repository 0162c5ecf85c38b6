import { MockActivityEnvironment } from '@temporalio/testing';
import { withHeartbeats } from './heartbeat';

const noop = () => undefined;
const env = () =>
  new MockActivityEnvironment(undefined, {
    logger: { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop },
  });

describe('withHeartbeats', () => {
  it('sends no heartbeat for work that is already done: a quick call costs the server no write', async () => {
    const e = env();
    const beats: unknown[] = [];
    e.on('heartbeat', (d) => beats.push(d));
    await expect(e.run(() => withHeartbeats(Promise.resolve('done'), { tool: 'fs.list' }))).resolves.toBe('done');
    expect(beats).toEqual([]);
  });

  it('heartbeats while the work waits, with its details and the time waited, and stops when it ends', async () => {
    const e = env();
    const beats: Array<Record<string, unknown>> = [];
    // The work ends only once a heartbeat was sent: no timing, just the order of events.
    const work = new Promise<string>((resolve) =>
      e.on('heartbeat', (d: Record<string, unknown>) => (beats.push(d), resolve('answered'))),
    );
    await expect(e.run(() => withHeartbeats(work, { model: 'm' }))).resolves.toBe('answered');
    expect(beats[0]).toMatchObject({ model: 'm', waitedMs: expect.any(Number) });
    const seen = beats.length;
    await new Promise((r) => setTimeout(r, 250));
    expect(beats).toHaveLength(seen);
  });
});
