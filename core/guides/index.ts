/**
 * The guide registry: an agent's `guide` config names one of these (docs/ARCHITECTURE.md#where-each-rule-lives).
 */
import { debuggingGuide } from './debugging';
import type { Guide } from './guide';
import { learningGuide } from './learning';
import { neutralGuide } from './neutral';
import { painGuide } from './pain';
import { safetyGuide } from './safety';
import { ConfigError } from '../errors';
import { GUIDE_IDS } from './ids';

export type { Guide, PainContext, SafetyAlert } from './guide';
export { calculateSeverity } from './pain';
export { REPEAT_ALERT_SENTENCE } from './failure-facts';
export { debuggingGuide, learningGuide, neutralGuide, painGuide, safetyGuide };

/**
 * Every shipped guide by id, in the order help and error messages list them.
 *
 * ```ts
 * GUIDES.pain.interpretPain(error, ctx);
 * ```
 */
export const GUIDES: Readonly<Record<string, Guide>> = Object.freeze({
  [painGuide.id]: painGuide,
  [safetyGuide.id]: safetyGuide,
  [learningGuide.id]: learningGuide,
  [debuggingGuide.id]: debuggingGuide,
  [neutralGuide.id]: neutralGuide,
});

/**
 * The ids of the shipped guides.
 *
 * ```ts
 * guideIds() // ['pain', 'safety', 'learning', 'debugging', 'neutral']
 * ```
 */
export function guideIds(): string[] {
  return [...GUIDE_IDS];
}

/**
 * The guide with this id.
 *
 * ```ts
 * getGuide('neutral').interpretPain(error, ctx);
 * getGuide('x'); // throws: Unknown guide "x". Known guides: pain, safety, learning, debugging, neutral.
 * ```
 * @throws ConfigError naming the unknown id and the known ones.
 */
export function getGuide(id: string): Guide {
  // Own properties only, so ids like "toString" or "__proto__" are unknown rather than Object's members.
  const guide = Object.prototype.hasOwnProperty.call(GUIDES, id) ? GUIDES[id] : undefined;
  if (guide === undefined) {
    throw new ConfigError(`Unknown guide "${id}". Known guides: ${guideIds().join(', ')}.`);
  }
  return guide;
}
