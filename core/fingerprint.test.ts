import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { canonicalJson, fingerprint } from './fingerprint';

/** The reference definition, computed with Node's own SHA-256. */
const expected = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);

/** Rebuild `value` with every object's keys in a seeded random order (defineProperty-safe for `__proto__`). */
function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item, i) => shuffleKeys(item, seed + i));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  let s = seed >>> 0;
  for (let i = keys.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const j = s % (i + 1);
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  return Object.fromEntries(keys.map((k) => [k, shuffleKeys((value as Record<string, unknown>)[k], s)]));
}

describe('canonicalJson', () => {
  it('sorts object keys recursively and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: [2, { d: null, c: 'x' }] })).toBe('{"a":[2,{"c":"x","d":null}],"b":1}');
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
  });

  it('sorts numeric-looking keys as strings, not in JavaScript property order', () => {
    expect(canonicalJson({ 10: 'a', 9: 'b', x: 'c' })).toBe('{"10":"a","9":"b","x":"c"}');
  });

  it('drops undefined object members and writes null in arrays, like JSON.stringify', () => {
    expect(canonicalJson({ a: undefined, b: () => 1, c: 1 })).toBe('{"c":1}');
    expect(canonicalJson([undefined, Number.NaN, Infinity])).toBe('[null,null,null]');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('honours toJSON like JSON.stringify', () => {
    expect(canonicalJson({ at: new Date(0) })).toBe('{"at":"1970-01-01T00:00:00.000Z"}');
  });

  it('agrees with JSON.stringify on values whose keys are already sorted', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const sorted = JSON.parse(canonicalJson(value));
        expect(canonicalJson(sorted)).toBe(canonicalJson(value));
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it('rejects circular structures with a TypeError', () => {
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(() => canonicalJson(loop)).toThrow(TypeError);
  });

  it('accepts the same object twice when it is not circular', () => {
    const shared = { a: 1 };
    expect(canonicalJson([shared, shared])).toBe('[{"a":1},{"a":1}]');
  });
});

describe('fingerprint', () => {
  it('is the first 16 hex chars of SHA-256 of toolName:canonicalJson(args)', () => {
    const print = fingerprint('fs.read', { b: 1, a: [2, { d: null, c: 'x' }] });
    expect(print).toBe(expected('fs.read:{"a":[2,{"c":"x","d":null}],"b":1}'));
    expect(print).toMatch(/^[0-9a-f]{16}$/);
  });

  it('matches a fixed known vector', () => {
    // Literals from `node -e` with node:crypto, pinned so a change of definition cannot pass silently.
    expect(fingerprint('fs.read', { path: 'a.txt' })).toBe('28080100c233b117');
    expect(fingerprint('a', {})).toBe('7609e7a5665f4acb');
  });

  it('hashes raw (unparsable) argument text as is', () => {
    expect(fingerprint('fs.read', '{"path": "a.txt"')).toBe(expected('fs.read:{"path": "a.txt"'));
  });

  it('hashes non-ASCII text as UTF-8', () => {
    expect(fingerprint('fs.write', { text: 'héllo 🌟' })).toBe(expected('fs.write:{"text":"héllo 🌟"}'));
  });

  it('does not depend on the order of object keys', () => {
    fc.assert(
      fc.property(fc.object(), fc.integer(), (args, seed) => {
        const shuffled = shuffleKeys(args, seed);
        expect(canonicalJson(shuffled)).toBe(canonicalJson(args));
        expect(fingerprint('tool', shuffled)).toBe(fingerprint('tool', args));
      }),
    );
  });

  it('gives different prints for different arguments', () => {
    expect(fingerprint('fs.read', { path: 'a' })).not.toBe(fingerprint('fs.read', { path: 'b' }));
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        fc.pre(canonicalJson(a) !== canonicalJson(b));
        expect(fingerprint('tool', a)).not.toBe(fingerprint('tool', b));
      }),
    );
  });

  it('gives different prints for the same arguments to different tools', () => {
    expect(fingerprint('fs.read', { path: 'a' })).not.toBe(fingerprint('fs.delete', { path: 'a' }));
  });
});
