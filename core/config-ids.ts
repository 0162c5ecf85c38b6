/**
 * The ids and names an agent's config gives (its guide, its context strategy, its shared budget), in a
 * module of their own: the config schema (core/config.ts) checks them, and the guides, the context
 * strategies and the budget rules define by them, so none of those needs the config schema (which the
 * task workflow never evaluates) to know what an id is.
 */
import { z } from 'zod';
import { once } from './lazy';

/** A guide id: what an agent's `guide` names. Lowercase, so ids compare as written. */
export const GUIDE_ID_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;

/** What the id pattern asks, in words, for error messages. */
export const GUIDE_ID_RULE = 'a lowercase letter, then up to 63 lowercase letters, digits, "_" or "-"';

/** A context strategy id: what `context.strategy` may name. */
export const CONTEXT_STRATEGY_ID = /^[a-z][a-z0-9_-]{0,63}$/;

/** The context strategy a config that names none gets. */
export const DEFAULT_CONTEXT_STRATEGY = 'prefix';

const BUDGET_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** What a budget name may hold, in words, for error messages. */
export const BUDGET_NAME_RULE =
  'a budget name is 1-64 letters, digits, "_", "." or "-", starting with a letter or digit (e.g. team-a)';

/** A shared budget's name, as configs and admins give it (core/budget.ts). */
export const budgetNameSchema = once(() =>
  z
    .string({ error: 'budget must be a string' })
    .regex(BUDGET_NAME, BUDGET_NAME_RULE)
    .refine((n) => !n.includes(':'), BUDGET_NAME_RULE),
);
