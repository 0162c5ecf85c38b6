/**
 * Warnings a test provokes on purpose (a corpus of bad payloads, a refused signal): declared here, they
 * are counted instead of printed, so the run's output shows only what nobody expected.
 */
const key = Symbol.for('starry.expectedLogs');
type Registry = { patterns: RegExp[]; seen: Map<string, number> };
const registry = ((globalThis as Record<symbol, Registry>)[key] ??= { patterns: [], seen: new Map() });

/** Declare warnings this test file provokes. */
export function expectWarnings(...patterns: RegExp[]): void {
  registry.patterns.push(...patterns);
}

/** True (and counted) when a log message was declared as expected. */
export function expectedLog(message: string): boolean {
  const p = registry.patterns.find((re) => re.test(message));
  if (!p) return false;
  registry.seen.set(p.source, (registry.seen.get(p.source) ?? 0) + 1);
  return true;
}

/** How many times a declared warning was logged. */
export function seenWarnings(pattern: RegExp): number {
  return registry.seen.get(pattern.source) ?? 0;
}
