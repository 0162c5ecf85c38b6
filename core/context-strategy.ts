/**
 * Context strategies (seed 000: "Context Management — pluggable strategies determining what the LLM
 * sees"). A strategy decides, before each LLM call, where the window over the transcript opens and
 * whether the turns it leaves out are replaced by a summary. It is a pure, deterministic function of
 * what it is shown (it runs in the workflow sandbox, and a replay must decide the same), so a worker
 * may register its own like a tool: `registerContextStrategy`, selected by `context.strategy`.
 *
 * The built-ins: `prefix` (the default) keeps each request's beginning the same as the last one's, so
 * providers bill it at their cached rate; `window` slides turn by turn (the behaviour before strategies);
 * `summarize` is `prefix` with the dropped turns replaced by a summary the same model writes.
 */
import { entriesTokens, windowStart, type WindowLimits } from './context';
import { ConfigError } from './errors';
import type { TranscriptEntry } from './llm';
import { CONTEXT_STRATEGY_ID, DEFAULT_CONTEXT_STRATEGY } from './config-ids';

/** What a strategy sees before an LLM call. */
export interface ContextView {
  /**
   * The transcript the next call may send, oldest first: the anchored head (system prompt, goal, and a
   * summary when one replaced older turns), then every turn since the previous call's window opened.
   */
  entries: readonly TranscriptEntry[];
  /** The limits of the agent's config, with the calibrated bytes per token and the head's length. */
  limits: Required<WindowLimits>;
  /** Where the previous call's window opened, an index into `entries` (absent before the task's first call). */
  previousStart?: number;
}

/** What a strategy decides. */
export interface ContextPlan {
  /**
   * Where the window opens: the index in `entries` of the oldest entry after the head to send. It never
   * moves back (a smaller value counts as `previousStart`) and never opens on a tool result (it moves past
   * them, so a result is never sent without the assistant turn that asked for it).
   */
  start: number;
  /** Replace the entries the window leaves out now (and any earlier summary) by one summary message. */
  summarize?: boolean;
}

/**
 * A context strategy: an id (`context.strategy` in the config names it), a line for help and error
 * messages, and `plan`, pure and deterministic: no clock, no randomness, no I/O.
 *
 * ```ts
 * const everything: ContextStrategy = {
 *   id: 'everything',
 *   description: 'sends the whole transcript (for short tasks)',
 *   plan: (view) => ({ start: view.previousStart ?? view.limits.anchored }),
 * };
 * ```
 */
export interface ContextStrategy {
  id: string;
  description: string;
  plan(view: ContextView): ContextPlan;
}

// The ids a config names are config's (core/config.ts), read from there.
export { CONTEXT_STRATEGY_ID, DEFAULT_CONTEXT_STRATEGY };

/** When the window must shrink, `prefix` keeps about this share of the room after the head. */
const SHRINK_TO = 0.5;

const registry = new Map<string, ContextStrategy>();

/**
 * Make a strategy selectable by its id (the built-ins are registered the same way). Registering the
 * same object twice is harmless; another strategy under a taken id is refused.
 *
 * ```ts
 * registerContextStrategy(everything);
 * parseAgentConfig({ context: { strategy: 'everything' } }, 'scripted:/tmp/turns.json');
 * ```
 * @throws ConfigError when the id is malformed or taken.
 */
export function registerContextStrategy(strategy: ContextStrategy): void {
  if (!CONTEXT_STRATEGY_ID.test(strategy.id))
    throw new ConfigError(
      `context strategy id ${JSON.stringify(strategy.id)}: use a lowercase letter, then lowercase letters, digits, _ or - (at most 64)`,
    );
  if (typeof strategy.plan !== 'function')
    throw new ConfigError(`context strategy ${strategy.id}: plan(view) must be a function`);
  const taken = registry.get(strategy.id);
  if (taken && taken !== strategy)
    throw new ConfigError(`context strategy ${strategy.id} is registered already: give yours another id`);
  registry.set(strategy.id, strategy);
}

/**
 * The registered strategies' ids, the built-ins first.
 *
 * ```ts
 * contextStrategyIds() // ['prefix', 'window', 'summarize']
 * ```
 */
export function contextStrategyIds(): string[] {
  return [...registry.keys()];
}

/**
 * The strategy registered under `id`.
 *
 * ```ts
 * getContextStrategy('prefix').plan(view)
 * ```
 * @throws ConfigError listing the known ids when none has that id.
 */
export function getContextStrategy(id: string): ContextStrategy {
  const strategy = registry.get(id);
  if (!strategy)
    throw new ConfigError(
      `unknown context strategy ${JSON.stringify(id)}: use one of ${contextStrategyIds().join(', ')}`,
    );
  return strategy;
}

/**
 * A plan made safe to follow: a whole index between where the previous window opened and the end,
 * moved past tool results. A custom strategy's mistake costs it its plan, never a malformed request.
 *
 * ```ts
 * const { start } = checkedPlan(strategy.plan(view), view);
 * ```
 */
export function checkedPlan(plan: ContextPlan, view: ContextView): Required<ContextPlan> {
  const { entries, limits } = view;
  const floor = view.previousStart ?? limits.anchored;
  let start = Number.isInteger(plan.start) ? Math.min(Math.max(plan.start, floor), entries.length) : floor;
  while (start < entries.length && entries[start]?.role === 'tool') start++;
  return { start, summarize: plan.summarize === true && start > floor };
}

/**
 * The slide: the newest turns that fit, the window moving forward as little as it can.
 *
 * ```ts
 * windowStrategy.plan({ entries, limits, previousStart: 2 }) // { start: windowStart(entries, limits) } when past 2
 * ```
 */
export const windowStrategy: ContextStrategy = {
  id: 'window',
  description: 'slides turn by turn: the newest turns that fit (each request past the limit starts differently)',
  plan: (view) => ({
    start: Math.max(windowStart(view.entries, view.limits), view.previousStart ?? view.limits.anchored),
  }),
};

/**
 * Where a prefix-stable window opens: where it opened last time while everything since fits (the request
 * only grows, so it repeats the previous one); when it no longer fits, past a block large enough that
 * about half the room is left, so the requests after it again only grow.
 */
function prefixStart(view: ContextView): { start: number; shrunk: boolean } {
  const { entries, limits } = view;
  const previous = view.previousStart ?? limits.anchored;
  const fits = windowStart(entries, limits);
  if (fits <= previous) return { start: previous, shrunk: false };
  const head = entriesTokens(entries.slice(0, limits.anchored), limits.bytesPerToken);
  const half = windowStart(entries, {
    ...limits,
    maxTokens: head + Math.floor((limits.maxTokens - head) * SHRINK_TO),
    maxMessages: Math.max(1, Math.floor(limits.maxMessages * SHRINK_TO)),
  });
  return { start: Math.max(half, fits, previous), shrunk: true };
}

/**
 * The default: append-only while it fits, then one large drop (docs/ARCHITECTURE.md#context-strategies).
 *
 * ```ts
 * prefixStrategy.plan({ entries, limits, previousStart: 2 }) // { start: 2 } while everything fits
 * ```
 */
export const prefixStrategy: ContextStrategy = {
  id: 'prefix',
  description: 'grows append-only while it fits, then drops the older half at once (cache-friendly; the default)',
  plan: (view) => ({ start: prefixStart(view).start }),
};

/**
 * `prefix`, with the dropped turns (and any earlier summary) replaced by a summary the model writes.
 *
 * ```ts
 * summarizeStrategy.plan(view) // { start: 14, summarize: true } when the window drops entries 2..13
 * ```
 */
export const summarizeStrategy: ContextStrategy = {
  id: 'summarize',
  description: 'like prefix, but the dropped turns are replaced by a summary the same model writes',
  plan: (view) => {
    const { start, shrunk } = prefixStart(view);
    return { start, summarize: shrunk };
  },
};

for (const strategy of [prefixStrategy, windowStrategy, summarizeStrategy]) registerContextStrategy(strategy);
