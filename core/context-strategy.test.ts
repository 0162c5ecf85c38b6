import {
  contextStrategyIds,
  getContextStrategy,
  prefixStrategy,
  registerContextStrategy,
  summarizeStrategy,
  windowStrategy,
  type ContextStrategy,
  type ContextView,
} from './context-strategy';
import { ConfigError } from './errors';
import type { TranscriptEntry } from './llm';

const system: TranscriptEntry = { role: 'system', ref: 'system', bytes: 2000 };
const goal: TranscriptEntry = { role: 'user', ref: 'goal', bytes: 200 };

/** Turn `i`: the assistant's call and its 1 KB result (with `calls` calls, that many results). */
function turn(i: number, calls = 1): TranscriptEntry[] {
  return [
    { role: 'assistant', ref: `a${i}`, bytes: 200 },
    ...Array.from({ length: calls }, (_, k) => ({ role: 'tool' as const, ref: `r${i}.${k}`, bytes: 1000 })),
  ];
}

const limits = { maxMessages: 1000, maxTokens: 8000, bytesPerToken: 4, anchored: 2 };

/**
 * Drive a strategy over `ticks` turns the way TaskRun does in store mode: plan, keep the head and the
 * window, remember where it opened, add the next turn. Returns each request's entries.
 */
function drive(strategy: ContextStrategy, ticks: number, calls = (_i: number) => 1): TranscriptEntry[][] {
  let entries: TranscriptEntry[] = [system, goal];
  let previousStart: number | undefined;
  const requests: TranscriptEntry[][] = [];
  for (let i = 1; i <= ticks; i++) {
    const view: ContextView = { entries, limits, ...(previousStart !== undefined ? { previousStart } : {}) };
    const { start } = strategy.plan(view);
    const sent = [...entries.slice(0, 2), ...entries.slice(start)];
    requests.push(sent);
    entries = [...sent, ...turn(i, calls(i))];
    previousStart = 2;
  }
  return requests;
}

/** How many leading entries two requests share. */
function common(a: readonly TranscriptEntry[], b: readonly TranscriptEntry[]): number {
  let n = 0;
  while (n < a.length && n < b.length && JSON.stringify(a[n]) === JSON.stringify(b[n])) n++;
  return n;
}

describe('the prefix strategy', () => {
  it('keeps each request a continuation of the previous one on most ticks, past the token limit', () => {
    const requests = drive(prefixStrategy, 200);
    const continued = requests.slice(1).filter((r, i) => common(r, requests[i]!) === requests[i]!.length);
    // 1 KB results in 8,000 tokens (32 KB): a drop every dozen ticks or so, every other request continues.
    expect(continued.length).toBeGreaterThan(0.85 * 199);
  });

  it('drops a large block at once when the window must shrink: about half the room', () => {
    const requests = drive(prefixStrategy, 60);
    const drops = requests.slice(1).flatMap((r, i) => (common(r, requests[i]!) < requests[i]!.length ? [i + 1] : []));
    expect(drops.length).toBeGreaterThan(2);
    for (const at of drops) {
      const before = requests[at - 1]!.length;
      const after = requests[at]!.length;
      // From a full window to about half of it: many turns go, not one.
      expect(before - after).toBeGreaterThan(8);
    }
  });

  it('slides turn by turn with the window strategy instead (the prefix changes on every tick past the limit)', () => {
    const requests = drive(windowStrategy, 60);
    const continued = requests.slice(1).filter((r, i) => common(r, requests[i]!) === requests[i]!.length);
    expect(continued.length).toBeLessThan(40);
  });

  it.each([prefixStrategy, windowStrategy, summarizeStrategy])(
    'keeps the head first and never opens the window on a tool result ($id)',
    (strategy) => {
      // Turns of one to three calls, so a cut by size would land on a result now and then.
      const requests = drive(strategy, 120, (i) => 1 + (i % 3));
      for (const r of requests) {
        expect(r.slice(0, 2)).toEqual([system, goal]);
        expect(r[2]?.role).not.toBe('tool');
        const bytes = r.reduce((n, m) => n + ('bytes' in m ? m.bytes : 0), 0);
        expect(Math.ceil(bytes / 4)).toBeLessThanOrEqual(8000 + 2000);
      }
    },
  );

  it('never moves the window back', () => {
    const entries = [system, goal, ...turn(1), ...turn(2)];
    expect(prefixStrategy.plan({ entries, limits, previousStart: 4 }).start).toBeGreaterThanOrEqual(4);
  });
});

describe('the summarize strategy', () => {
  it('asks for a summary exactly when its window drops turns', () => {
    let entries: TranscriptEntry[] = [system, goal];
    const asked: number[] = [];
    let previousStart: number | undefined;
    for (let i = 1; i <= 60; i++) {
      const view: ContextView = { entries, limits, ...(previousStart !== undefined ? { previousStart } : {}) };
      const plan = summarizeStrategy.plan(view);
      expect(plan.start).toBe(prefixStrategy.plan(view).start);
      if (plan.summarize) asked.push(i);
      expect(plan.summarize === true).toBe(plan.start > (previousStart ?? 2));
      entries = [...entries.slice(0, 2), ...entries.slice(plan.start), ...turn(i)];
      previousStart = 2;
    }
    expect(asked.length).toBeGreaterThan(2);
  });
});

describe('the context strategy registry', () => {
  it('has the built-ins, prefix first', () => {
    expect(contextStrategyIds().slice(0, 3)).toEqual(['prefix', 'window', 'summarize']);
    expect(getContextStrategy('window')).toBe(windowStrategy);
  });

  it('refuses an unknown id, listing the known ones', () => {
    expect(() => getContextStrategy('nope')).toThrow(ConfigError);
    expect(() => getContextStrategy('nope')).toThrow(
      /unknown context strategy "nope": use one of prefix, window, summarize/,
    );
  });

  it('registers a worker’s own strategy, and refuses a malformed or taken id', () => {
    const everything: ContextStrategy = {
      id: 'everything-test',
      description: 'sends the whole transcript',
      plan: (view) => ({ start: view.previousStart ?? view.limits.anchored }),
    };
    registerContextStrategy(everything);
    registerContextStrategy(everything); // the same object again: harmless
    expect(getContextStrategy('everything-test')).toBe(everything);
    expect(contextStrategyIds()).toContain('everything-test');
    expect(() => registerContextStrategy({ ...everything })).toThrow(/registered already/);
    expect(() => registerContextStrategy({ ...everything, id: 'Bad Id' })).toThrow(/lowercase letter/);
  });
});
