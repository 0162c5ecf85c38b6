/**
 * Worker plugins (docs/LIBRARY.md#plugins): a module that gives a worker guides and context strategies of
 * its own. Its code runs in the workflow sandbox, so it is pure: the worker bundles each plugin module
 * into its workflow code and registers what it exports when the bundle is evaluated (workers/plugins.ts
 * writes that entry); the worker also loads it in Node, to check it and to know the ids it offers.
 */
import { CONTEXT_STRATEGY_ID, registerContextStrategy, type ContextStrategy } from './context-strategy';
import { ConfigError } from './errors';
import { defineGuide, GUIDE_ID_RULE, registerGuide, type Guide } from './guides';

/**
 * What a plugin module exports (named exports, or a default export of this shape).
 *
 * ```ts
 * // careful-plugin.ts
 * import { defineGuide, type WorkerPlugin } from 'openstarry-temporal/plugins';
 * export const guides: WorkerPlugin['guides'] = [defineGuide({ id: 'careful', ... })];
 * ```
 */
export interface WorkerPlugin {
  /** Guides, each made with `defineGuide`; their ids must not be taken. */
  guides?: readonly Guide[];
  /** Context strategies an agent's `context.strategy` may name. */
  contextStrategies?: readonly ContextStrategy[];
}

/** What a plugin module offers, checked: its guides (checked as `defineGuide` does) and strategies. */
export interface CheckedPlugin {
  guides: Guide[];
  contextStrategies: ContextStrategy[];
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object';

/**
 * The plugin a module's exports give: its named `guides` / `contextStrategies`, or else its default
 * export's. `from` names the module in errors.
 *
 * ```ts
 * pluginOf(require('./careful-plugin'), './careful-plugin') // { guides: [careful], contextStrategies: [] }
 * ```
 * @throws ConfigError when it exports neither, or something of the wrong shape.
 */
export function pluginOf(exports: unknown, from: string): CheckedPlugin {
  const named = isObject(exports) && ('guides' in exports || 'contextStrategies' in exports);
  const plugin = named ? exports : isObject(exports) && isObject(exports.default) ? exports.default : undefined;
  const guides = listOf(plugin?.guides, 'guides', from).map((g, i) => {
    try {
      return defineGuide(g as Guide);
    } catch (err) {
      throw new ConfigError(`plugin module ${from}: guides[${i}]: ${(err as Error).message}`);
    }
  });
  const contextStrategies = listOf(plugin?.contextStrategies, 'contextStrategies', from).map((s, i) => {
    if (!isObject(s) || typeof s.id !== 'string' || !CONTEXT_STRATEGY_ID.test(s.id))
      throw new ConfigError(
        `plugin module ${from}: contextStrategies[${i}] has no valid id (${GUIDE_ID_RULE}): give it an id and plan(view) (ContextStrategy)`,
      );
    if (typeof s.plan !== 'function')
      throw new ConfigError(`plugin module ${from}: context strategy "${s.id}" needs plan(view) as a function`);
    return s as unknown as ContextStrategy;
  });
  if (!guides.length && !contextStrategies.length)
    throw new ConfigError(
      `plugin module ${from} exports no guides and no context strategies: export \`guides\` (made with defineGuide) and/or \`contextStrategies\`, or a default export { guides, contextStrategies }`,
    );
  const ids = contextStrategies.map((s) => s.id);
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice) throw new ConfigError(`plugin module ${from} gives context strategy "${twice}" twice`);
  return { guides, contextStrategies };
}

function listOf(value: unknown, name: string, from: string): readonly unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ConfigError(`plugin module ${from}: \`${name}\` must be an array`);
  return value;
}

/**
 * Register a plugin module's guides and context strategies where the task workflow looks them up. The
 * worker's generated workflow entry calls it for each plugin module, in the order the worker was given.
 *
 * ```ts
 * registerPlugin(require('/srv/plugins/careful.js'), '/srv/plugins/careful.js');
 * ```
 * @throws ConfigError when an id is taken (the worker checked the same at its start).
 */
export function registerPlugin(exports: unknown, from: string): void {
  const plugin = pluginOf(exports, from);
  for (const guide of plugin.guides) registerGuide(guide, from);
  for (const strategy of plugin.contextStrategies) registerContextStrategy(strategy);
}

/** What a worker offers the tasks it takes: the ids of its guides and context strategies. */
export interface WorkerOffer {
  guides: readonly string[];
  /** Absent: the worker does not check strategies at submit. */
  contextStrategies?: readonly string[];
}

/**
 * Why a worker refuses a task's guide or context strategy, or `undefined` when it has both.
 *
 * ```ts
 * refusedChoices({ guides: ['pain', 'careful'] }, { guide: 'zen' })
 * // 'guide "zen" is not on this worker: it has pain, careful. …'
 * ```
 */
export function refusedChoices(
  offer: WorkerOffer,
  task: { guide?: string | undefined; contextStrategy?: string | undefined },
): string | undefined {
  const refused: string[] = [];
  if (task.guide !== undefined && !offer.guides.includes(task.guide))
    refused.push(`guide "${task.guide}" is not on this worker: it has ${offer.guides.join(', ')}`);
  const strategies = offer.contextStrategies;
  if (task.contextStrategy !== undefined && strategies && !strategies.includes(task.contextStrategy))
    refused.push(
      `context strategy "${task.contextStrategy}" is not on this worker: it has ${strategies.join(', ') || '(none)'}`,
    );
  if (!refused.length) return undefined;
  return `${refused.join('; ')}. A worker adds guides and context strategies with plugin modules (STARRY_PLUGINS, createWorker({ plugins })).`;
}
