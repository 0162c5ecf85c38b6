import { normalizedError } from '../errors';
import { approvalDecidedEvent, haltEvent, painEvent, tickCount } from '../telemetry';
import { TelemetryBuffer } from './telemetry-buffer';
import { roundTrip } from './test-support';

const eperm = normalizedError({ code: 'EPERM', message: 'denied', source: 'fs.read' });
const names = (counts: ReturnType<TelemetryBuffer['drainCounts']>) => counts.map((c) => c.metric.name);

describe('TelemetryBuffer', () => {
  it('keeps the facts for the trace in order, and counts each for the metrics', () => {
    const buffer = new TelemetryBuffer();
    buffer.record(painEvent(eperm, 1, 1), haltEvent(1));
    expect(buffer.drainEvents().map((e) => e.name)).toEqual(['starry.pain', 'starry.halt']);
    expect(names(buffer.drainCounts())).toEqual(['starry.pain', 'starry.halts']);
  });

  it('traces an approval without counting it, and counts a tick that has no trace fact', () => {
    const buffer = new TelemetryBuffer();
    buffer.trace(approvalDecidedEvent('t1.0', 'approved'));
    buffer.count(tickCount());
    expect(buffer.drainEvents().map((e) => e.name)).toEqual(['starry.approval.decided']);
    expect(names(buffer.drainCounts())).toEqual(['starry.ticks']);
  });

  it('hands each fact and count over once: a drain empties what it drains', () => {
    const buffer = new TelemetryBuffer();
    buffer.record(haltEvent(2));
    expect(buffer.drainEvents()).toHaveLength(1);
    expect(buffer.drainEvents()).toEqual([]);
    // The counts wait for their own drain.
    expect(buffer.drainCounts()).toHaveLength(1);
    expect(buffer.drainCounts()).toEqual([]);
  });

  it('serializes and deserializes with what it has not handed over yet', () => {
    const buffer = new TelemetryBuffer();
    buffer.record(painEvent(eperm, 2, 3));
    const copy = new TelemetryBuffer(roundTrip(buffer.data));
    expect(copy.drainEvents()).toEqual(buffer.drainEvents());
    expect(copy.drainCounts()).toEqual(buffer.drainCounts());
  });
});
