/**
 * The worker's ceilings on every agent's limits (`agentLimits` in the policy): the operator's outer
 * bound of the `safety` fields, which no task and no agent id escapes (docs/ARCHITECTURE.md, "Trust
 * boundary"). Checked at submit against the limits the task would run with: a new agent's first limits
 * (its task's over the defaults), or an existing agent's tightened by the task's own. An agent whose
 * limits are wider than a ceiling set later keeps them, but each of its tasks must narrow them to fit
 * (or an admin narrows the agent's). Pure.
 */
import type { SafetyConfig } from '../config';
import { isLooser, kebab, LIMIT_FIELDS, limitOf, LOOSER_WHEN, type LimitField } from '../limits';

/** The ceilings: some of the safety fields, each the loosest value any agent on the worker may run with. */
export type AgentLimits = Partial<SafetyConfig>;

/** One field a run's limits would take past the worker's ceiling. */
export interface LimitPastCeiling {
  field: LimitField;
  /** What the run would have (Infinity: no cost budget). */
  value: number;
  ceiling: number;
}

/**
 * The fields of `run` (the limits a task would run with) looser than the worker's ceilings.
 *
 * ```ts
 * pastCeilings({ tokenBudget: 100_000 }, { ...defaults, tokenBudget: 1e9 }) // [{ field: 'tokenBudget', value: 1e9, ceiling: 100000 }]
 * ```
 */
export function pastCeilings(ceilings: AgentLimits | undefined, run: SafetyConfig): LimitPastCeiling[] {
  if (!ceilings) return [];
  return LIMIT_FIELDS.flatMap((field): LimitPastCeiling[] => {
    const ceiling = ceilings[field];
    const value = limitOf(run, field);
    return ceiling !== undefined && isLooser(field, value, ceiling) ? [{ field, value, ceiling }] : [];
  });
}

/**
 * The refusal of a task whose limits go past the worker's ceilings, each field on a line with its
 * ceiling, and what helps: the task's own config narrowing them, or (an existing agent) an admin's.
 *
 * ```ts
 * ceilingRefusal('a1', true, pastCeilings(ceilings, run)) // "The task's limits are wider than the worker's agentLimits…"
 * ```
 */
export function ceilingRefusal(agentId: string, existing: boolean, past: LimitPastCeiling[]): string {
  const bound = (f: LimitField) => (LOOSER_WHEN[f] === 'higher' ? 'at most' : 'at least');
  const shown = (v: number) => (v === Infinity ? 'none (unbounded)' : String(v));
  const lines = past.map(
    (p) =>
      `safety.${p.field}: agent ${agentId} would run with ${shown(p.value)}; the worker allows ${bound(p.field)} ${p.ceiling}`,
  );
  const flags = past.map((p) => `--${kebab(p.field)} ${p.ceiling}`).join(' ');
  const admin = existing
    ? `, or have an admin narrow agent ${agentId}'s limits: starry limits ${agentId} ${flags} (PATCH /v1/agents/${agentId}/limits)`
    : '';
  return (
    `The task's limits are wider than the worker's ceilings (agentLimits in STARRY_WORKER_POLICY), which hold for every agent:\n` +
    `${lines.map((l) => `  - ${l}`).join('\n')}\n` +
    `Give these fields in the task's config (safety) within the ceilings${admin}; or ask the worker operator to raise agentLimits.`
  );
}
