import fc from 'fast-check';
import {
  failuresInWindow,
  initialCounters,
  recordOperation,
  type OperationRecord,
  type SafetyCounters,
} from './safety-counters';

/** Input builder: one operation, failed on `fs.read` with print `A` unless told otherwise. */
const op = (over: Partial<OperationRecord> = {}): OperationRecord => ({
  toolName: 'fs.read',
  fingerprint: 'A',
  success: false,
  cascadeWindow: 10,
  ...over,
});

const replay = (ops: OperationRecord[]): SafetyCounters => ops.reduce(recordOperation, initialCounters());

/** Freeze all the way down, so a mutation throws (test files are strict mode). */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') Object.values(value).forEach(deepFreeze);
  return Object.freeze(value);
}

const opArb = fc.record({
  toolName: fc.constantFrom('fs.read', 'shell.run'),
  fingerprint: fc.constantFrom('A', 'B', 'C'),
  success: fc.boolean(),
  cascadeWindow: fc.constant(10),
});

describe('recordOperation', () => {
  it('starts from empty counters', () => {
    expect(initialCounters()).toEqual({ consecutiveFailures: 0, repeat: null, window: [] });
  });

  it('counts a run of identical failures', () => {
    expect(replay([op(), op(), op()]).repeat).toEqual({ fingerprint: 'A', toolName: 'fs.read', count: 3 });
  });

  it('starts a new run when the fingerprint changes', () => {
    const counters = replay([op(), op(), op({ fingerprint: 'B', toolName: 'shell.run' })]);
    expect(counters.repeat).toEqual({ fingerprint: 'B', toolName: 'shell.run', count: 1 });
    expect(counters.consecutiveFailures).toBe(3);
  });

  it('clears the consecutive and repeat counters on a success but keeps the window sliding', () => {
    const counters = replay([op(), op(), op({ success: true })]);
    expect(counters).toEqual({ consecutiveFailures: 0, repeat: null, window: ['failed', 'failed', 'ok'] });
  });

  it('keeps only the last cascadeWindow outcomes, oldest first', () => {
    const counters = replay([op({ success: true }), op(), op(), op()].map((o) => ({ ...o, cascadeWindow: 3 })));
    expect(counters.window).toEqual(['failed', 'failed', 'failed']);
    expect(failuresInWindow(counters)).toBe(3);
  });

  it('rejects a cascadeWindow that is not a positive integer with a RangeError naming it', () => {
    expect(() => recordOperation(initialCounters(), op({ cascadeWindow: 0 }))).toThrow(
      /cascadeWindow must be a positive integer, got 0/,
    );
  });

  it('never mutates the counters it is given', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 20 }), opArb, (history, next) => {
        const before = replay(history);
        const snapshot = structuredClone(before);
        recordOperation(deepFreeze(before), next);
        expect(before).toEqual(snapshot);
      }),
    );
  });

  it('serializes and deserializes through structuredClone and JSON', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 30 }), fc.array(opArb, { maxLength: 5 }), (history, more) => {
        const counters = replay(history);
        for (const copy of [structuredClone(counters), JSON.parse(JSON.stringify(counters)) as SafetyCounters]) {
          expect(copy).toEqual(counters);
          expect(more.reduce(recordOperation, copy)).toEqual(more.reduce(recordOperation, counters));
        }
      }),
    );
  });
});
