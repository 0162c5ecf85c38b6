/**
 * The guide registry: an agent's `guide` config names one of these (docs/ARCHITECTURE.md#guides). The five
 * shipped guides are always there; a worker adds its own from plugin modules (core/plugins.ts), which the
 * workflow bundle registers when it is evaluated, so the registry a task reads is its worker's.
 */
import { debuggingGuide } from './debugging';
import { GUIDE_ID_PATTERN } from './define';
import type { Guide } from './guide';
import { learningGuide } from './learning';
import { neutralGuide } from './neutral';
import { painGuide } from './pain';
import { safetyGuide } from './safety';
import { ConfigError } from '../errors';

export type { Guide, PainContext, SafetyAlert } from './guide';
export { defineGuide, GUIDE_ID_PATTERN, GUIDE_ID_RULE, type GuideSpec } from './define';
export { calculateSeverity } from './pain';
export { REPEAT_ALERT_SENTENCE } from './failure-facts';
export { debuggingGuide, learningGuide, neutralGuide, painGuide, safetyGuide };

/** The shipped guides, in the order help and error messages list them. */
export const BUILTIN_GUIDES: readonly Guide[] = Object.freeze([
  painGuide,
  safetyGuide,
  learningGuide,
  debuggingGuide,
  neutralGuide,
]);

/**
 * A set of guides by id: the shipped ones, then those registered, in their order. The workflow's is the
 * module's own (`registerGuide`); a worker builds one of its own to know the ids it offers before any
 * workflow runs (workers/plugins.ts).
 *
 * ```ts
 * const guides = new GuideRegistry();
 * guides.register(careful);
 * guides.ids(); // ['pain', 'safety', 'learning', 'debugging', 'neutral', 'careful']
 * ```
 */
export class GuideRegistry {
  private readonly guides = new Map<string, Guide>(BUILTIN_GUIDES.map((g) => [g.id, g]));

  /**
   * Add a guide (made with `defineGuide`).
   * @throws ConfigError when its id is taken (a shipped guide's or one registered before).
   */
  register(guide: Guide, from?: string): void {
    const where = from ? ` (from ${from})` : '';
    if (!GUIDE_ID_PATTERN.test(String(guide?.id)))
      throw new ConfigError(`guide ${JSON.stringify(guide?.id)}${where} has no valid id: make it with defineGuide`);
    if (this.guides.has(guide.id)) {
      const builtin = BUILTIN_GUIDES.some((g) => g.id === guide.id);
      throw new ConfigError(
        `guide id "${guide.id}"${where} is already taken${builtin ? ' by a built-in guide' : ''}: give your guide another id (e.g. "${guide.id}-own")`,
      );
    }
    this.guides.set(guide.id, guide);
  }

  /** Every id, the shipped ones first. */
  ids(): string[] {
    return [...this.guides.keys()];
  }

  /** @throws ConfigError naming the unknown id and the ones this registry has. */
  get(id: string): Guide {
    const guide = this.guides.get(id);
    if (guide === undefined) throw new ConfigError(`Unknown guide "${id}". This worker has: ${this.ids().join(', ')}.`);
    return guide;
  }
}

/** The registry the task workflow reads. Module state: each workflow evaluates its own (the SDK's module cache). */
const registry = new GuideRegistry();

/**
 * Register a guide where tasks look guides up. The worker's generated workflow entry calls it for each
 * plugin's guides (core/plugins.ts); an application does not call it (its guides go in a plugin module).
 *
 * ```ts
 * registerGuide(defineGuide({ id: 'careful', systemPrompt, interpretPain, interpretAlert }));
 * registerGuide(painGuide); // throws: guide id "pain" is already taken by a built-in guide …
 * ```
 * @throws ConfigError when the id is taken.
 */
export function registerGuide(guide: Guide, from?: string): void {
  registry.register(guide, from);
}

/**
 * The ids of the guides tasks can name here: the shipped ones, then the registered ones.
 *
 * ```ts
 * guideIds() // ['pain', 'safety', 'learning', 'debugging', 'neutral']
 * ```
 */
export function guideIds(): string[] {
  return registry.ids();
}

/**
 * The guide with this id.
 *
 * ```ts
 * getGuide('neutral').interpretPain(error, ctx);
 * getGuide('x'); // throws: Unknown guide "x". This worker has: pain, safety, learning, debugging, neutral.
 * ```
 * @throws ConfigError naming the unknown id and the ones there are.
 */
export function getGuide(id: string): Guide {
  return registry.get(id);
}
