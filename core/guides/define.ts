/**
 * `defineGuide`: how a guide is made, the five shipped ones and a worker's own alike. A guide runs inside
 * the task workflow (core/task-run.ts), so its functions must be pure and deterministic: the same input
 * gives the same text, with no clock, randomness, I/O or state kept between calls.
 */
import { ConfigError } from '../errors';
import type { Guide } from './guide';

// A guide id is what a config names (core/config.ts): read from there.
import { GUIDE_ID_PATTERN, GUIDE_ID_RULE } from '../config-ids';
export { GUIDE_ID_PATTERN, GUIDE_ID_RULE };

/** What `defineGuide` takes: a guide whose `description` may be left out. */
export type GuideSpec = Omit<Guide, 'description'> & { description?: string };

const FUNCTIONS = ['systemPrompt', 'interpretPain', 'interpretAlert'] as const;

/**
 * Make a guide: check its id and its three functions, and return it frozen. A guide changes what the
 * model is told, so changed text ships under a new id (`careful-v2`, docs/ARCHITECTURE.md#guides).
 *
 * ```ts
 * import { basePrompt, defineGuide, describeFailure } from 'openstarry-temporal/plugins';
 *
 * export const careful = defineGuide({
 *   id: 'careful',
 *   description: 'Failures are stated as facts, with a reminder to check before acting.',
 *   systemPrompt: (agent, tools) =>
 *     basePrompt(agent, { role: 'You are a careful agent.', failures: 'It states what failed.' }, tools),
 *   interpretPain: (error, ctx) => `${describeFailure(error, ctx)} Check before you act again.`,
 *   interpretAlert: (alert) => `ALERT ${alert.kind}: stop and think.`,
 * });
 * ```
 * @throws ConfigError naming what is wrong with the guide.
 */
export function defineGuide(spec: GuideSpec): Guide {
  if (spec === null || typeof spec !== 'object')
    throw new ConfigError(`defineGuide: expected an object { id, systemPrompt, interpretPain, interpretAlert }`);
  const id: unknown = spec.id;
  if (typeof id !== 'string' || !GUIDE_ID_PATTERN.test(id))
    throw new ConfigError(`defineGuide: id ${JSON.stringify(id)} is not a guide id: use ${GUIDE_ID_RULE}`);
  const missing = FUNCTIONS.filter((name) => typeof spec[name] !== 'function');
  if (missing.length)
    throw new ConfigError(
      `defineGuide: guide "${id}" needs ${missing.join(', ')} as function${missing.length === 1 ? '' : 's'}`,
    );
  if (spec.description !== undefined && typeof spec.description !== 'string')
    throw new ConfigError(`defineGuide: guide "${id}" has a description that is not a string`);
  return Object.freeze({
    id,
    description: spec.description ?? '',
    systemPrompt: spec.systemPrompt,
    interpretPain: spec.interpretPain,
    interpretAlert: spec.interpretAlert,
  });
}
