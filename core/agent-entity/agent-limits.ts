/**
 * An agent's config and its limits (docs/ARCHITECTURE.md, limits): its first task's config sets them; each
 * later task's own config replaces the agent's but for its limits (`safety`), its shared budget and its approval rules,
 * which only an admin changes (`admin:limits`, recorded in a change log), and which a task may only
 * tighten for its own run. Tokens a human adds at an unlock stay added until an admin sets the budget.
 * Plain data in the agent's `AgentData`; the functions change the part they are given.
 */
import { mergeApprovalRules, ruleText, type ApprovalRule } from '../approval';
import type { AgentConfig, TaskConfig } from '../config';
import type { LimitsRecord, LimitsResult } from '../contract';
import { PermissionDeniedError, RefusedError } from '../errors';
import {
  changeLimits,
  firstLimits,
  LIMIT_FIELDS,
  refuseLooserLimits,
  runLimits,
  type LimitField,
  type LimitsChange,
} from '../limits';
import { LIMITS } from '../payloads';

/** The agent's config and what changed its limits. */
export interface LimitsData {
  /**
   * The agent's config: its first task's, when it was started without one; each task's own replaces it,
   * but for its limits (`safety`), which only an admin changes (core/limits.ts).
   */
  config?: AgentConfig;
  /**
   * Tokens humans added with `unlock --add-tokens` since the budget was last set (by the first config or
   * `admin:limits`): in the agent's budget, and added to a task's own `tokenBudget` too, so they stay added.
   */
  addedTokens?: number;
  /** Admins' changes of the agent's limits (`admin:limits`), the newest. */
  limitChanges?: LimitsRecord[];
}

const withAddedTokens = (config: AgentConfig, tokens: number): AgentConfig =>
  tokens > 0 ? { ...config, safety: { ...config.safety, tokenBudget: config.safety.tokenBudget + tokens } } : config;

/** The agent's limits as a task's config counts them: its budget without the tokens humans added since it was set. */
function limitsBeforeAdded(config: AgentConfig, addedTokens = 0): AgentConfig['safety'] {
  return { ...config.safety, tokenBudget: config.safety.tokenBudget - addedTokens };
}

/**
 * Refuse a task's config the agent cannot take: none while the agent has none either, limits looser than
 * the agent's (only an admin loosens them), or a first task's limits that do not fit.
 *
 * @throws RefusedError without any config; PermissionDeniedError for looser limits; ConfigError for limits that do not fit.
 */
export function refuseTaskConfig(d: LimitsData, agentId: string, own: TaskConfig | undefined): void {
  if (!d.config && !own)
    throw new RefusedError(`agent ${agentId} has no config yet: submit its first task with one (it names the LLM)`);
  if (own && d.config) refuseLooserLimits(agentId, limitsBeforeAdded(d.config, d.addedTokens), own.safety);
  else if (own) firstLimits(own.safety);
  if (own) refuseOtherBudget(d.config, agentId, own);
}

/**
 * Refuse a task's config naming another shared budget than its agent's: the budget an agent draws from
 * is its limit, which only an admin changes or drops (`admin:limits` `budget`). A config that leaves it
 * out runs with the agent's (`configForRun`), so leaving it out drops nothing.
 *
 * @throws PermissionDeniedError naming both budgets and the admin's command.
 */
export function refuseOtherBudget(agent: AgentConfig | undefined, agentId: string, own: TaskConfig): void {
  if (!agent?.budget || own.budget === undefined || own.budget === agent.budget) return;
  const issue = `budget: '${own.budget}' is not agent ${agentId}'s shared budget '${agent.budget}'; changing it needs admin`;
  throw new PermissionDeniedError(
    `changing the shared budget needs admin: an agent's shared budget is its limit.\n  - ${issue}\n` +
      `Leave budget out to run with the agent's, or have an admin change it first: starry limits ${agentId} --budget ${own.budget} (PATCH /v1/agents/${agentId}/limits).`,
    { issues: [issue] },
  );
}

/** An agent started without a config takes its first task's, its limits the defaults with the task's. */
export function adoptFirstConfig(d: LimitsData, own: TaskConfig | undefined): void {
  if (!d.config && own) d.config = withAddedTokens({ ...own, safety: firstLimits(own.safety) }, d.addedTokens ?? 0);
}

/**
 * The config a task runs with. Its own config (when it has one) replaces the agent's but for the limits,
 * which stay the agent's (tokens a human added included), and the approval rules, likewise; the run gets
 * the tighter of its own limits and the agent's, field by field, and its own rules added to the agent's.
 *
 * @throws Error when neither has a config (a submit is refused then, so never).
 */
export function configForRun(d: LimitsData, agentId: string, taskId: string, own: TaskConfig | undefined): AgentConfig {
  if (own) {
    const rules = d.config ? d.config.tools.approval : own.tools.approval;
    const { approval: _asked, ...tools } = own.tools;
    // The shared budget is a limit too: the agent's once it has one, whatever the task's config says.
    const budget = d.config ? (d.config.budget ?? own.budget) : own.budget;
    const { budget: _named, ...rest } = own;
    d.config = {
      ...rest,
      ...(budget !== undefined ? { budget } : {}),
      safety: d.config?.safety ?? firstLimits(own.safety),
      tools: rules ? { ...tools, approval: rules } : tools,
    };
  }
  if (!d.config) throw new Error(`agent ${agentId} has no config for task ${taskId}`);
  const asked = own?.safety ?? {};
  const added = d.addedTokens ?? 0;
  const safety = runLimits(
    d.config.safety,
    asked.tokenBudget !== undefined && added > 0 ? { ...asked, tokenBudget: asked.tokenBudget + added } : asked,
  );
  const approval = mergeApprovalRules(d.config.tools.approval, own?.tools.approval);
  return { ...d.config, safety, tools: { ...d.config.tools, ...(approval ? { approval } : {}) } };
}

/** `unlock --add-tokens`: the budget grows by `tokens`, and they are remembered as added. */
export function addTokens(d: LimitsData, tokens: number): void {
  if (tokens <= 0) return;
  d.addedTokens = (d.addedTokens ?? 0) + tokens;
  if (d.config) d.config = withAddedTokens(d.config, tokens);
}

/**
 * Why an admin's change of the agent's limits is refused now (no limits yet, a change that does not
 * fit), or nothing.
 *
 * @throws RefusedError before the agent has a config; ConfigError for limits that do not fit.
 */
export function refuseLimitsChange(d: LimitsData, agentId: string, input: LimitsChange): void {
  if (!d.config)
    throw new RefusedError(
      `agent ${agentId} has no limits yet: its first task sets them (submit it with a config), then an admin may change them`,
    );
  changeLimits(d.config.safety, input.safety, input.costBudgetUsd === null);
}

/**
 * `admin:limits`: an admin sets some of the agent's limits and its approval rules, recorded with who did
 * it. `runningTaskId` names a running task, which keeps the limits it started with.
 */
export function setAgentLimits(
  d: LimitsData,
  agentId: string,
  input: LimitsChange,
  runningTaskId: string | undefined,
): LimitsResult {
  refuseLimitsChange(d, agentId, input);
  const config = d.config!;
  const { limits, from, to } = changeLimits(config.safety, input.safety, input.costBudgetUsd === null);
  const changed: string[] = LIMIT_FIELDS.filter((f) => f in to);
  const rules = config.tools.approval;
  // Rules that ask nothing and deny nothing are none.
  const next = input.approval && (input.approval.ask.length || input.approval.deny.length) ? input.approval : undefined;
  const rulesChanged = input.approval !== undefined && JSON.stringify(next) !== JSON.stringify(rules);
  const tools = { ...config.tools };
  if (rulesChanged) {
    if (next) tools.approval = next;
    else delete tools.approval;
    changed.push('approval');
  }
  const budget = input.budget === undefined ? config.budget : (input.budget ?? undefined);
  const budgetChanged = budget !== config.budget;
  if (budgetChanged) changed.push('budget');
  const { budget: _old, ...others } = config;
  d.config = { ...others, ...(budget !== undefined ? { budget } : {}), safety: limits, tools };
  // The budget set now holds the tokens added before.
  if (input.safety.tokenBudget !== undefined) d.addedTokens = 0;
  if (changed.length) {
    const record: LimitsRecord = { by: input.by ?? 'an admin', from, to };
    if (input.note) record.note = input.note;
    if (rulesChanged) record.approval = { ...(rules ? { from: rules } : {}), ...(next ? { to: next } : {}) };
    if (budgetChanged)
      record.budget = { ...(config.budget ? { from: config.budget } : {}), ...(budget ? { to: budget } : {}) };
    d.limitChanges = [...(d.limitChanges ?? []), record].slice(-LIMITS.limitChanges);
  }
  const said = changed.map((f) =>
    f === 'approval'
      ? `approval rules ${rulesText(rules)} → ${rulesText(next)}`
      : f === 'budget'
        ? `shared budget ${config.budget ?? 'none'} → ${budget ?? 'none'}`
        : `${f} ${from[f as LimitField] ?? 'none'} → ${to[f as LimitField] ?? 'none'}`,
  );
  const message = changed.length
    ? `agent ${agentId}'s limits changed: ${said.join(', ')}${runningTaskId ? ` (task ${runningTaskId} keeps the limits it started with; the next task runs with these)` : ''}`
    : `agent ${agentId}'s limits already are these: nothing changed`;
  return {
    limits,
    ...((next ?? rules) ? { approval: rulesChanged ? next : rules } : {}),
    ...(budget ? { budget } : {}),
    changed,
    message,
  };
}

/** Approval rules as people read them: `ask [shell.run] deny [http.get]`, or `none`. */
export function rulesText(rules: { ask: ApprovalRule[]; deny: ApprovalRule[] } | undefined): string {
  if (!rules) return 'none';
  return `ask [${rules.ask.map(ruleText).join(', ')}] deny [${rules.deny.map(ruleText).join(', ')}]`;
}
