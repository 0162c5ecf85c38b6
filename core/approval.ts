/**
 * Human approval of tool calls (seeds: Level 3, human override): which calls must wait for a person,
 * which are refused outright, and what a decision or its absence means to the agent. Pure: the task
 * workflow asks `approvalVerdict` before a turn's calls run, waits durably for the decisions the agent
 * forwards, and turns a denial or an expiry into `E_DENIED` pain the Guide interprets like any failure.
 *
 * Rules come from two places and add up: the task's config (`tools.approval`) and the worker's policy
 * (`approval`, its operator's outer limit). A task can add rules, never remove the worker's.
 */
import { z } from 'zod';
import { normalizedError, type NormalizedError } from './errors';
import { once } from './lazy';
import { LIMITS } from './payload-limits';
import { isValidToolName } from './tools';

/** Calls of one turn that may wait for a human at once; the turn's further calls are denied unasked. */
export const MAX_WAITING_CALLS = 20;
/** How long a call waits when the config says nothing: a day. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 86_400_000;
/** The longest wait a config may ask for: 30 days. */
export const MAX_APPROVAL_TIMEOUT_MS = 30 * 86_400_000;
/** A rule's regex may be this long; an argument is matched on this many characters at most. */
const MAX_PATTERN_CHARS = 200;
const MATCHED_CHARS = 2_000;
/** Characters of a decision's reason kept (the model and the history see them). */
export const REASON_CHARS = LIMITS.noteChars;

const toolPattern = once(() =>
  z
    .string()
    .max(100)
    .refine((p) => p === '*' || isValidToolName(p.endsWith('.*') ? p.slice(0, -2) : p), {
      error: (i) => `${JSON.stringify(i.input)} is not a tool name, a prefix.* or *`,
    }),
);

/**
 * Why a regex may not guard an argument: invalid, too long, or with a quantified group that repeats a
 * quantifier (`(a+)+`), which can take exponential time on a long argument and stall the workflow.
 */
export function patternProblem(pattern: string): string | undefined {
  if (pattern.length > MAX_PATTERN_CHARS) return `a pattern may be ${MAX_PATTERN_CHARS} characters at most`;
  try {
    new RegExp(pattern);
  } catch (err) {
    return `not a valid regular expression (${(err as Error).message})`;
  }
  if (/\([^()]*[*+}][^()]*\)\s*[*+{]/.test(pattern))
    return 'a repeated group that repeats inside (like (a+)+) may take exponential time: write it without the nesting';
  return undefined;
}

const argPattern = once(() =>
  z.string().superRefine((p, ctx) => {
    const problem = patternProblem(p);
    if (problem) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(p)}: ${problem}` });
  }),
);

/** A rule: a tool name, `prefix.*`, `*`, or `{tool, args}` with a regex per argument (all must match). */
export const approvalRuleSchema = once(() =>
  z.union([
    toolPattern(),
    z
      .object({
        tool: toolPattern(),
        args: z
          .record(z.string().min(1).max(100), argPattern())
          .refine((a) => Object.keys(a).length <= 10, 'at most 10 arguments per rule')
          .optional(),
      })
      .strict(),
  ]),
);
export type ApprovalRule = z.output<ReturnType<typeof approvalRuleSchema>>;

/** The worker policy's `approval`: rules every task on the worker obeys. */
export const approvalRulesSchema = once(() =>
  z
    .object({
      /** Calls that wait for a human's decision before they run. */
      ask: z.array(approvalRuleSchema()).max(50).default([]),
      /** Calls refused without asking (E_DENIED pain). */
      deny: z.array(approvalRuleSchema()).max(50).default([]),
    })
    .strict(),
);
export type ApprovalRules = z.output<ReturnType<typeof approvalRulesSchema>>;

/** A config's `tools.approval`: the rules, and how long a call waits before it counts as denied. */
export const approvalConfigSchema = once(() =>
  approvalRulesSchema().extend({
    timeoutMs: z
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(1000, 'must be >= 1000')
      .max(MAX_APPROVAL_TIMEOUT_MS, `must be <= ${MAX_APPROVAL_TIMEOUT_MS} (30 days)`)
      .default(DEFAULT_APPROVAL_TIMEOUT_MS),
  }),
);
export type ApprovalConfig = z.output<ReturnType<typeof approvalConfigSchema>>;

/** What happens to a call: it runs, it waits for a human, or it is refused; with the rule that decided. */
export type ApprovalVerdict = { verdict: 'run' } | { verdict: 'ask' | 'deny'; rule: string; from: 'config' | 'worker' };

/**
 * The verdict of a call under the config's rules and the worker's: `deny` over `ask` over `run`.
 *
 * ```ts
 * approvalVerdict({ ask: ['shell.run'], deny: [] }, undefined, 'shell.run', { command: 'ls' })
 * // { verdict: 'ask', rule: 'shell.run', from: 'config' }
 * approvalVerdict({ ask: [{ tool: 'fs.write', args: { path: '^src/' } }], deny: [] }, undefined, 'fs.write', { path: 'README.md' })
 * // { verdict: 'run' }
 * ```
 */
export function approvalVerdict(
  config: Pick<ApprovalRules, 'ask' | 'deny'> | undefined,
  worker: Pick<ApprovalRules, 'ask' | 'deny'> | undefined,
  tool: string,
  args: unknown,
): ApprovalVerdict {
  for (const verdict of ['deny', 'ask'] as const) {
    for (const [from, rules] of [
      ['worker', worker],
      ['config', config],
    ] as const) {
      const rule = rules?.[verdict].find((r) => ruleMatches(r, tool, args));
      if (rule) return { verdict, rule: ruleText(rule), from };
    }
  }
  return { verdict: 'run' };
}

function ruleMatches(rule: ApprovalRule, tool: string, args: unknown): boolean {
  const pattern = typeof rule === 'string' ? rule : rule.tool;
  const named = pattern === '*' || (pattern.endsWith('.*') ? tool.startsWith(pattern.slice(0, -1)) : pattern === tool);
  if (!named || typeof rule === 'string' || !rule.args) return named;
  const values = (args ?? {}) as Record<string, unknown>;
  return Object.entries(rule.args).every(([name, re]) => {
    const value = values[name];
    if (value === undefined) return false;
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    return new RegExp(re).test(text.slice(0, MATCHED_CHARS));
  });
}

/**
 * The rules a task runs with: its agent's, and those its own config adds (a task can add rules, never
 * remove its agent's); the task's `timeoutMs` when it gives rules, else the agent's.
 *
 * ```ts
 * mergeApprovalRules({ ask: ['shell.run'], deny: [], timeoutMs: 60000 }, { ask: ['fs.write'], deny: [], timeoutMs: 5000 })
 * // { ask: ['shell.run', 'fs.write'], deny: [], timeoutMs: 5000 }
 * ```
 */
export function mergeApprovalRules(
  agent: ApprovalConfig | undefined,
  task: ApprovalConfig | undefined,
): ApprovalConfig | undefined {
  if (!agent || !task || agent === task) return task ?? agent;
  const union = (a: ApprovalRule[], b: ApprovalRule[]) => {
    const seen = new Set(a.map(ruleText));
    return [...a, ...b.filter((r) => !seen.has(ruleText(r)))];
  };
  return { ask: union(agent.ask, task.ask), deny: union(agent.deny, task.deny), timeoutMs: task.timeoutMs };
}

/** A rule as people read it: `shell.run`, or `fs.write {path: ^src/}`. */
export function ruleText(rule: ApprovalRule): string {
  if (typeof rule === 'string') return rule;
  const args = Object.entries(rule.args ?? {}).map(([k, v]) => `${k}: ${v}`);
  return args.length ? `${rule.tool} {${args.join(', ')}}` : rule.tool;
}

/** A call waiting for a human: what the agent lists and what `starry approvals` shows. */
export interface PendingApproval {
  /** The call's id within its task (`t<tick>.<index>`), what `starry approve AGENT CALL_ID` names. */
  callId: string;
  taskId: string;
  workflowId: string;
  tool: string;
  args: unknown;
  tick: number;
  /** The rule that asked, and whose it is. */
  rule: string;
  from: 'config' | 'worker';
  /** ISO times: when it was asked, and when it counts as denied if nobody decides. */
  askedAt: string;
  expiresAt: string;
}

/** A human's decision, as the agent forwards it to the task (and records it). */
export interface ApprovalDecision {
  callId: string;
  decision: 'approve' | 'deny';
  by: string;
  /** ISO time the agent took it. */
  at: string;
  reason?: string;
  note?: string;
  /** Edited arguments the call runs with instead of the model's (approve only). */
  args?: Record<string, unknown>;
}

/** The decision payload of the `decideApproval` update (and of `POST /v1/agents/{id}/approvals/{callId}`). */
export const decisionInputSchema = once(() =>
  z
    .object({
      callId: z.string().regex(/^t\d{1,9}\.\d{1,4}$/, 'callId looks like t3.0 (see `starry approvals`)'),
      decision: z.enum(['approve', 'deny'], { error: 'decision must be "approve" or "deny"' }),
      reason: z.string().max(REASON_CHARS, `reason must be at most ${REASON_CHARS} characters`).optional(),
      note: z.string().max(REASON_CHARS, `note must be at most ${REASON_CHARS} characters`).optional(),
      args: z.record(z.string(), z.unknown(), { error: 'args must be a JSON object' }).optional(),
      by: z.string().max(LIMITS.byChars).optional(),
    })
    .strict()
    .refine((d) => d.decision === 'approve' || d.args === undefined, {
      message: 'args edit an approved call: a denial takes none',
      path: ['args'],
    }),
);
export type DecisionInput = z.output<ReturnType<typeof decisionInputSchema>>;

/** The command that approves a pending call, for alerts, details and `starry approvals`. */
export function approveCommand(agentId: string, callId: string): string {
  return `starry approve ${agentId} ${callId}`;
}

/** The command that denies it. */
export function denyCommand(agentId: string, callId: string): string {
  return `starry deny ${agentId} ${callId} --reason "…"`;
}

/**
 * The pain of a call that did not run for want of approval: a rule denied it, a human did (with the
 * reason they gave), nobody decided in time, or too many calls of its turn waited already.
 *
 * ```ts
 * deniedError('shell.run', { by: 'alice', reason: 'not on prod' })
 * // { code: 'E_DENIED', kind: 'execution', message: 'alice denied this shell.run call: not on prod', ... }
 * ```
 */
export function deniedError(
  tool: string,
  why:
    | { by: string; reason?: string }
    | { rule: string; from: 'config' | 'worker' }
    | { expiredAfterMs: number }
    | { overflow: number },
): NormalizedError {
  let message: string;
  let suggestion: string;
  if ('by' in why) {
    message = `${why.by} denied this ${tool} call${why.reason ? `: ${why.reason}` : ' (no reason given)'}`;
    suggestion =
      'A human decided against this call: take their reason into account, do not ask for the same call again.';
  } else if ('rule' in why) {
    message = `${tool} is denied by the ${why.from === 'worker' ? "worker's policy" : "agent's config"} (rule ${why.rule}); it was not run`;
    suggestion = 'This call is never allowed: reach the goal another way.';
  } else if ('expiredAfterMs' in why) {
    message = `no decision within ${formatWait(why.expiredAfterMs)}: this ${tool} call was not run`;
    suggestion = 'Nobody approved it in time: go on without it, or explain why it is needed.';
  } else {
    message = `more than ${why.overflow} calls of one turn waited for approval: this ${tool} call was not asked and not run`;
    suggestion = 'Make fewer calls that need approval per turn.';
  }
  return normalizedError({ code: 'E_DENIED', kind: 'execution', source: tool, message, suggestion });
}

/** `90 s`, `15 min`, `2 h`, `1 d`: a wait as people say it. */
export function formatWait(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${Math.round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} d`;
}

/** A waiting call in the Web UI's details: the call, its arguments, and the commands that decide it. */
export function approvalLine(agentId: string, p: PendingApproval): string {
  const args = JSON.stringify(p.args);
  return [
    `- **waiting for approval** \`${p.callId}\` · \`${p.tool}\` ${args.length > 300 ? `${args.slice(0, 300)}…` : args} (rule ${p.rule}, until ${p.expiresAt})`,
    `  - approve: \`${approveCommand(agentId, p.callId)}\` · deny: \`${denyCommand(agentId, p.callId)}\``,
  ].join('\n');
}

// ---- the messages that carry approvals between the task, the agent and a human ------------------------

export const pendingApprovalSchema = once(() =>
  z
    .object({
      callId: z.string(),
      taskId: z.string(),
      workflowId: z.string(),
      tool: z.string(),
      args: z.unknown(),
      tick: z.number().int(),
      rule: z.string(),
      from: z.enum(['config', 'worker']),
      askedAt: z.string(),
      expiresAt: z.string(),
    })
    .strict(),
);

/** What the task tells its agent whenever the set of waiting calls changes (asked, expired, settled). */
export const approvalsReportSchema = once(() =>
  z.object({ taskId: z.string(), waiting: z.array(pendingApprovalSchema()).max(MAX_WAITING_CALLS) }).strict(),
);
export type ApprovalsReport = z.output<ReturnType<typeof approvalsReportSchema>>;

export const approvalDecisionSchema = once(() =>
  z
    .object({
      callId: z.string(),
      decision: z.enum(['approve', 'deny']),
      by: z.string(),
      at: z.string(),
      reason: z.string().optional(),
      note: z.string().optional(),
      args: z.record(z.string(), z.unknown()).optional(),
    })
    .strict(),
);
