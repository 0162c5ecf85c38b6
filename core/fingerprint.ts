/**
 * Tool-call fingerprints (docs/ARCHITECTURE.md#the-safety-ladder): the identity the repeated-failure breaker compares.
 * Pure and
 * deterministic, because the workflow computes them.
 */
// `sha2` rather than the brief's `sha256` entry point: same function, and `sha256` is deprecated in 1.8.
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

/**
 * JSON with object keys sorted recursively, so `{a, b}` and `{b, a}` serialise the same. Arrays keep
 * their order. Otherwise it follows `JSON.stringify`: `toJSON` is honoured, `undefined`, functions and
 * symbols are dropped from objects and become `null` in arrays, non-finite numbers become `null`.
 * A top-level value JSON cannot represent (`undefined`) is written `null`, so the result is always a string.
 *
 * ```ts
 * canonicalJson({ b: 1, a: [2, { d: null, c: 'x' }] }) // '{"a":[2,{"c":"x","d":null}],"b":1}'
 * ```
 * @throws TypeError on a circular structure or a bigint, as `JSON.stringify` does.
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set()) ?? 'null';
}

/** `undefined` means "not representable": the caller drops it (object) or writes `null` (array). */
function write(input: unknown, ancestors: Set<object>): string | undefined {
  const value = unwrap(input);
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('canonicalJson: cannot serialise a bigint');
    case 'object':
      break;
    default: // undefined, function, symbol
      return undefined;
  }
  if (ancestors.has(value)) throw new TypeError('canonicalJson: circular structure');
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      return `[${value.map((item) => write(item, ancestors) ?? 'null').join(',')}]`;
    }
    const record = value as Record<string, unknown>;
    const members: string[] = [];
    // Plain code-unit sort: locale-independent, so every worker computes the same print.
    for (const key of Object.keys(record).sort()) {
      const member = write(record[key], ancestors);
      if (member !== undefined) members.push(`${JSON.stringify(key)}:${member}`);
    }
    return `{${members.join(',')}}`;
  } finally {
    ancestors.delete(value);
  }
}

/** Apply `toJSON` and unbox `new String(...)` and friends, like `JSON.stringify`. */
function unwrap(value: unknown): unknown {
  let out = value;
  if (out !== null && typeof out === 'object' && typeof (out as { toJSON?: unknown }).toJSON === 'function') {
    out = (out as { toJSON: () => unknown }).toJSON();
  }
  if (out instanceof Number || out instanceof String || out instanceof Boolean) out = out.valueOf();
  return out;
}

/**
 * First 16 hex chars of SHA-256 of `` `${toolName}:${canonicalJson(args)}` ``. A string `args` is the
 * model's raw argument text that did not parse; it is hashed as is, so a repeated garbled call is still
 * recognised as the same call.
 *
 * ```ts
 * fingerprint('fs.read', { path: 'a.txt' }) === fingerprint('fs.read', { path: 'a.txt' }) // true
 * fingerprint('fs.read', '{"path": "a.txt"') // raw text, hashed unchanged
 * ```
 */
export function fingerprint(toolName: string, args: unknown): string {
  const body = typeof args === 'string' ? args : canonicalJson(args);
  return bytesToHex(sha256(utf8ToBytes(`${toolName}:${body}`))).slice(0, 16);
}
