/**
 * An agent's limits (docs/ARCHITECTURE.md#limits): the ten `safety` fields of its config, allocated by
 * its first task and changed by an admin only (`admin:limits`, `admin:unlock --add-tokens`). A task's
 * config may tighten them for its own run, never loosen them: this file says which way each field is
 * looser, what a task's given fields loosen, and what a run gets. Retry, context and tools are not limits
 * (the worker's policy bounds the tools). Pure.
 */
import { z } from 'zod';
import { approvalConfigSchema } from './approval';
import { budgetNameSchema } from './config-ids';
import { partialSafetySchema, safetyConfigSchema, type SafetyConfig } from './config';
import { ConfigError, PermissionDeniedError } from './errors';
import { once } from './lazy';
import { by, note } from './payloads';

/** The limits, in the order the docs and messages list them. */
export const LIMIT_FIELDS = [
  'maxTicks',
  'tokenBudget',
  'repeatThreshold',
  'frustrationThreshold',
  'cascadeWindow',
  'cascadeErrors',
  'toolTimeoutMs',
  'llmTimeoutMs',
  'maxOutputTokens',
  'costBudgetUsd',
] as const satisfies readonly (keyof SafetyConfig)[];

export type LimitField = (typeof LIMIT_FIELDS)[number];

/**
 * The way a field is looser. Every limit is looser when higher but `cascadeWindow`: the error cascade
 * trips at `cascadeErrors` failures among the last `cascadeWindow` operations, and a smaller window sees
 * fewer of them, so it trips later.
 */
export const LOOSER_WHEN: Record<LimitField, 'higher' | 'lower'> = {
  maxTicks: 'higher',
  tokenBudget: 'higher',
  repeatThreshold: 'higher',
  frustrationThreshold: 'higher',
  cascadeWindow: 'lower',
  cascadeErrors: 'higher',
  toolTimeoutMs: 'higher',
  llmTimeoutMs: 'higher',
  maxOutputTokens: 'higher',
  costBudgetUsd: 'higher',
};

/**
 * A limit's value, an absent one (only `costBudgetUsd` may be: no cost budget) counting as unbounded.
 *
 * ```ts
 * limitOf({ ...safety, costBudgetUsd: undefined }, 'costBudgetUsd') // Infinity
 * ```
 */
export function limitOf(safety: Partial<SafetyConfig>, field: LimitField): number {
  return safety[field] ?? Infinity;
}

/**
 * True when `value` is looser than `limit` for `field`.
 *
 * ```ts
 * isLooser('tokenBudget', 2000, 1000) // true
 * isLooser('cascadeWindow', 5, 10)    // true: a smaller window trips later
 * ```
 */
export function isLooser(field: LimitField, value: number, limit: number): boolean {
  return LOOSER_WHEN[field] === 'higher' ? value > limit : value < limit;
}

/** The tighter of two values of `field`. */
export function tighter(field: LimitField, a: number, b: number): number {
  return isLooser(field, a, b) ? b : a;
}

/**
 * `admin:limits`' payload (a task workflow never meets it, so it is here and not in core/payloads.ts,
 * which tasks evaluate: workers/module-graph.test.ts).
 */
export const limitsInputSchema = once(() =>
  z
    .object({
      /** The limits to change (the agent's `safety` fields), each to its new value; the others stay. */
      safety: partialSafetySchema().default({}),
      /**
       * The agent's approval rules, replaced whole (`{"ask": [], "deny": []}` removes them): the one way to
       * take a rule away, since a task's config may only add rules.
       */
      approval: approvalConfigSchema().optional(),
      /**
       * The shared budget the agent draws from (`starry budget create`), or null for none: the one way to
       * change or drop it, since a task's config may not (core/agent-entity/agent-limits.ts).
       */
      budget: budgetNameSchema().nullable().optional(),
      /** null: the agent has no cost budget any more (`safety` cannot say so: a cost budget is > 0). */
      costBudgetUsd: z.null().optional(),
      note: note().optional(),
      by: by().optional(),
    })
    .strict()
    .refine(
      (i) =>
        Object.keys(i.safety).length > 0 ||
        i.approval !== undefined ||
        i.budget !== undefined ||
        i.costBudgetUsd !== undefined,
      {
        message: 'give at least one limit to change: a safety field, approval, or budget',
        path: ['safety'],
        // Only when nothing else is wrong: an unknown field is the one thing to say.
        when: (payload) => payload.issues.length === 0,
      },
    )
    .refine((i) => !(i.costBudgetUsd === null && i.safety.costBudgetUsd !== undefined), {
      message: 'give safety.costBudgetUsd to set the cost budget or costBudgetUsd: null to remove it, not both',
      path: ['costBudgetUsd'],
    }),
);
/** `admin:limits`' payload as a caller sends it: an admin's change of an agent's limits (defaults left out). */
export type LimitsInput = z.input<ReturnType<typeof limitsInputSchema>>;
/** The same payload checked, its defaults filled in (what the agent applies). */
export type LimitsChange = z.output<ReturnType<typeof limitsInputSchema>>;

/** One field a task's config would loosen. */
export interface LoosenedLimit {
  field: LimitField;
  /** The agent's limit. */
  limit: number;
  /** What the task asked for. */
  asked: number;
}

/**
 * The fields of a task's given limits that are looser than its agent's, and the refusal that names
 * them; undefined when the task only tightens or keeps them.
 *
 * ```ts
 * loosenedLimits('a1', agentSafety, { tokenBudget: 1e9 })?.message // 'raising tokenBudget needs admin: …'
 * ```
 */
export function loosenedLimits(
  agentId: string,
  agent: SafetyConfig,
  task: Partial<SafetyConfig>,
): { fields: LoosenedLimit[]; message: string; issues: string[] } | undefined {
  const fields = LIMIT_FIELDS.flatMap((field): LoosenedLimit[] => {
    const asked = task[field];
    const limit = limitOf(agent, field);
    return asked !== undefined && isLooser(field, asked, limit) ? [{ field, limit, asked }] : [];
  });
  if (!fields.length) return undefined;
  const verb = (f: LimitField) => (LOOSER_WHEN[f] === 'higher' ? 'raising' : 'lowering');
  const issues = fields.map(
    (f) =>
      `safety.${f.field}: ${f.asked} is looser than agent ${agentId}'s limit ${f.limit}; ${verb(f.field)} ${f.field} needs admin`,
  );
  const flags = fields.map((f) => `--${kebab(f.field)} ${f.asked}`).join(' ');
  const message =
    `${fields.map((f) => `${verb(f.field)} ${f.field}`).join(', ')} needs admin: a task's config may only tighten its agent's limits.\n` +
    `${issues.map((i) => `  - ${i}`).join('\n')}\n` +
    `Leave the field out to run with the agent's limit, or have an admin change the agent's limits first: starry limits ${agentId} ${flags} (PATCH /v1/agents/${agentId}/limits).`;
  return { fields, message, issues };
}

/**
 * Refuse a task's given limits that loosen its agent's (`loosenedLimits`).
 *
 * @throws PermissionDeniedError naming each looser field.
 */
export function refuseLooserLimits(agentId: string, agent: SafetyConfig, task: Partial<SafetyConfig>): void {
  const loosened = loosenedLimits(agentId, agent, task);
  if (loosened) throw new PermissionDeniedError(loosened.message, { issues: loosened.issues });
}

/**
 * The limits a task runs with: the agent's, each field the task gives taking the tighter of the two (the
 * agent's may have been lowered since the task was submitted).
 *
 * ```ts
 * runLimits(agentSafety, { tokenBudget: 500 }).tokenBudget // 500 when the agent's is 1000
 * ```
 */
export function runLimits(agent: SafetyConfig, task: Partial<SafetyConfig> = {}): SafetyConfig {
  const out = { ...agent };
  for (const field of LIMIT_FIELDS) {
    const asked = task[field];
    if (asked !== undefined) out[field] = tighter(field, asked, limitOf(agent, field));
  }
  return out;
}

/**
 * A new agent's limits: the defaults, with what its first task gives.
 *
 * @throws ConfigError when the two together do not fit (`cascadeErrors` above the default window, say).
 */
export function firstLimits(task: Partial<SafetyConfig> = {}): SafetyConfig {
  return checkedLimits(task, "the agent's first limits (its first task's config over the defaults)");
}

/**
 * An agent's limits after an admin's change, and the fields it changed (with their old values);
 * `noCostBudget` removes the cost budget (its `to` then says `undefined`).
 *
 * ```ts
 * changeLimits(current, { tokenBudget: 5000 }) // { limits: {…, tokenBudget: 5000}, from: { tokenBudget: 1000 }, to: { tokenBudget: 5000 } }
 * ```
 * @throws ConfigError naming an invalid field, or a pair that does not fit (cascadeErrors above cascadeWindow).
 */
export function changeLimits(
  current: SafetyConfig,
  change: Partial<SafetyConfig>,
  noCostBudget = false,
): { limits: SafetyConfig; from: Partial<SafetyConfig>; to: Partial<SafetyConfig> } {
  const given = partialSafetySchema().safeParse(change);
  if (!given.success)
    throw new ConfigError(`invalid limits: ${issueText(given.error.issues)}`, {
      issues: given.error.issues.map((i) => `safety.${i.path.join('.')}: ${i.message}`),
    });
  const { costBudgetUsd: _removed, ...kept } = current;
  const limits = checkedLimits(
    { ...(noCostBudget ? kept : current), ...given.data },
    "the agent's limits with the change",
  );
  const from: Partial<SafetyConfig> = {};
  const to: Partial<SafetyConfig> = {};
  for (const field of LIMIT_FIELDS) {
    if (limits[field] !== current[field]) {
      from[field] = current[field];
      to[field] = limits[field];
    }
  }
  return { limits, from, to };
}

function checkedLimits(raw: Partial<SafetyConfig>, what: string): SafetyConfig {
  const parsed = safetyConfigSchema().safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(`invalid limits: ${what}: ${issueText(parsed.error.issues)}`, {
      issues: parsed.error.issues.map((i) => `safety.${i.path.join('.')}: ${i.message}`),
    });
  }
  return parsed.data;
}

const issueText = (issues: readonly { path: PropertyKey[]; message: string }[]) =>
  issues.map((i) => `safety.${i.path.join('.')}: ${i.message}`).join('; ');

/** `tokenBudget` → `token-budget`: a field as its `starry limits` flag names it. */
export function kebab(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
