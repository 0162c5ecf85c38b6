/**
 * Agent configuration (docs/ARCHITECTURE.md#configuration), validated once at the edge with zod: the
 * parsed, fully-defaulted `AgentConfig` (its `llm` a typed `LlmSpec`) is what clients send and workflows
 * carry. The agent parses a submitted config once more, as every payload it takes (an already-parsed
 * config parses to itself). The schemas are built on first use (core/lazy.ts).
 */
import { z } from 'zod';
import { approvalConfigSchema } from './approval';
import { once } from './lazy';
import { llmSpecSchema, type LlmSpec } from './llm-spec';
import { pricingSchema } from './pricing';
import { ConfigError } from './errors';
import { isValidToolName, TOOL_NAMES } from './tools';

import {
  BUDGET_NAME_RULE,
  budgetNameSchema,
  CONTEXT_STRATEGY_ID,
  DEFAULT_CONTEXT_STRATEGY,
  GUIDE_ID_PATTERN,
  GUIDE_ID_RULE,
} from './config-ids';

export {
  BUDGET_NAME_RULE,
  budgetNameSchema,
  CONTEXT_STRATEGY_ID,
  DEFAULT_CONTEXT_STRATEGY,
  GUIDE_ID_PATTERN,
  GUIDE_ID_RULE,
};

export { ConfigError };

/**
 * A whole number in 1..max. Zod puts the field's path in front of each issue, so the messages do not
 * repeat it. The upper bounds keep payloads and histories inside Temporal's limits (docs/ARCHITECTURE.md).
 */
const positiveInt = (max: number) =>
  z
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .positive('must be > 0')
    .max(max, `must be <= ${max}`);

/** The safety limits with their defaults (core/limits.ts says which way each is looser). */
const safetyObject = once(() =>
  z
    .object({
      // Tasks continue as new when Temporal suggests it, so the loop cap is not bound by one history.
      maxTicks: positiveInt(100_000).default(50),
      tokenBudget: positiveInt(1_000_000_000).default(100_000),
      repeatThreshold: positiveInt(100).default(3),
      frustrationThreshold: positiveInt(100).default(5),
      cascadeWindow: positiveInt(1000).default(10),
      cascadeErrors: positiveInt(1000).default(8),
      toolTimeoutMs: positiveInt(3_600_000).default(30_000),
      /**
       * Time one LLM call attempt may take: a provider that hangs becomes a transient timeout (retried by
       * the retry policy) in minutes, not an hour.
       */
      llmTimeoutMs: positiveInt(3_600_000).default(120_000),
      /** Tokens an LLM call may produce at most, before the budget cap applies. */
      maxOutputTokens: positiveInt(1_000_000).default(8192),
      /**
       * Dollars the agent may spend on LLM calls (core/pricing.ts), beside the token budget: no call once
       * spent, each call's output capped to what the rest buys. Absent: no cost budget.
       */
      costBudgetUsd: z
        .number({ error: 'must be a number (US dollars)' })
        .positive('must be > 0 (US dollars)')
        .max(1_000_000_000, 'must be <= 1000000000')
        .optional(),
    })
    .strict(),
);

const cascadeFits = (s: { cascadeErrors?: number; cascadeWindow?: number }) =>
  s.cascadeErrors === undefined || s.cascadeWindow === undefined || s.cascadeErrors <= s.cascadeWindow;
const cascadeIssue = { message: 'cascadeErrors must be <= cascadeWindow', path: ['cascadeErrors'] };

export const safetyConfigSchema = once(() => safetyObject().refine(cascadeFits, cascadeIssue));

/**
 * Some of the safety limits, as a task's config or an admin (`admin:limits`) gives them: each checked
 * as in a whole config, none filled in (a field left out is the agent's own).
 */
export const partialSafetySchema = once(
  (): z.ZodType<Partial<SafetyConfig>> =>
    z
      .object(
        Object.fromEntries(
          Object.entries(safetyObject().shape).map(([field, schema]) => [field, schema.unwrap().optional()]),
        ),
      )
      .strict()
      .refine(cascadeFits, cascadeIssue) as z.ZodType<Partial<SafetyConfig>>,
);

export const retryConfigSchema = once(() =>
  z
    .object({
      initialIntervalMs: positiveInt(3_600_000).default(1000),
      backoffCoefficient: z
        .number({ error: 'must be a number' })
        .min(1, 'must be >= 1')
        .max(10, 'must be <= 10')
        .default(2),
      maximumIntervalMs: positiveInt(3_600_000).default(30_000),
      maximumAttempts: positiveInt(100).default(5),
    })
    .strict(),
);

/** The prefixes of the built-in tools (`fs`, `shell`, `http`): no MCP server takes one. */
const BUILTIN_PREFIXES = new Set(TOOL_NAMES.map((name) => name.split('.')[0]!));

/**
 * Where `${env:NAME}` is allowed: header and environment values are templates filled in on the worker
 * from its own environment, so secrets stay out of configs and histories.
 */
const workerTemplate = () => z.string().max(4096);

/**
 * An MCP server: a program the worker starts (stdio; the command must be on the worker's
 * `mcpCommands`) or a Streamable HTTP endpoint (its host must be on the worker's `httpAllow`).
 */
export const mcpServerSchema = once(() =>
  z.union(
    [
      z
        .object({
          command: z.string().min(1).max(1024),
          args: z.array(z.string().max(4096)).max(64).default([]),
          /** Environment of the server, besides PATH and HOME: values may use `${env:NAME}` of the worker. */
          env: z
            .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), workerTemplate())
            .optional(),
        })
        .strict(),
      z
        .object({
          url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
          /** Request headers: values may use `${env:NAME}` of the worker (`"Authorization": "Bearer ${env:TOKEN}"`). */
          headers: z.record(z.string().min(1).max(256), workerTemplate()).optional(),
        })
        .strict(),
    ],
    { error: 'an MCP server is {command, args?, env?} (stdio) or {url, headers?} (Streamable HTTP)' },
  ),
);

export const toolsConfigSchema = once(() =>
  z
    .object({
      /**
       * Commands `shell.run` may start (the first word of the command line). Unset: the list of the worker
       * that runs the task (its policy's `shellAllow`), resolved by that worker, never a wider default.
       */
      shellAllow: z.array(z.string().min(1).max(256)).max(100).optional(),
      /** Hosts `http.get` may reach. */
      httpAllow: z.array(z.string().min(1).max(2048)).max(100).default([]),
      /**
       * Bytes of tool output kept at most; more is E_OUTPUT_TOO_LARGE. Unset: 64 KiB, or the worker's cap
       * when it is lower (resolved by the worker, like `shellAllow`).
       */
      maxOutputBytes: positiveInt(1024 * 1024).optional(),
      /**
       * The tools this agent is offered (absent: every tool the worker has, built-in, its own and those of
       * the config's MCP servers): names, or `prefix.*` for every tool under a prefix. The worker checks
       * at submit that each names one of its tools; a call to another tool is E_UNKNOWN_TOOL pain.
       */
      allow: z
        .array(
          z.string().refine((entry) => isValidToolName(entry.endsWith('.*') ? entry.slice(0, -2) : entry), {
            error: (i) =>
              `${JSON.stringify(i.input)} is not a tool name (e.g. ${TOOL_NAMES.slice(0, 2).join(', ')}, or github.* for every tool of the MCP server github)`,
          }),
        )
        .min(1, 'allow needs at least one tool (leave it out to offer every tool)')
        .max(100)
        .optional(),
      /**
       * Calls that wait for a human's approval before they run (`ask`), calls refused unasked (`deny`):
       * tool names, `prefix.*`, `*`, or `{tool, args: {name: regex}}`; and how long a call waits (`timeoutMs`).
       * The worker's policy may add rules of its own, which a task cannot remove.
       */
      approval: approvalConfigSchema().optional(),
      /** MCP servers whose tools this agent is offered as `<server>.<tool>`; the worker's policy allows each. */
      mcp: z
        .record(z.string(), mcpServerSchema())
        .refine((servers) => Object.keys(servers).length <= 16, 'at most 16 MCP servers')
        .superRefine((servers, ctx) => {
          for (const name of Object.keys(servers).filter((s) => !/^[A-Za-z][A-Za-z0-9_-]{0,31}$/.test(s))) {
            ctx.addIssue({
              code: 'custom',
              path: [name],
              message: `${JSON.stringify(name)}: an MCP server name is a letter, then letters, digits, _ or - (at most 32)`,
            });
          }
        })
        .refine((servers) => !Object.keys(servers).some((s) => BUILTIN_PREFIXES.has(s)), {
          error: () =>
            `an MCP server may not be named like a built-in tool's prefix (${[...BUILTIN_PREFIXES].join(', ')})`,
        })
        .optional(),
    })
    .strict(),
);

export const contextConfigSchema = once(() =>
  z
    .object({
      strategy: z
        .string({ error: 'must be a string' })
        .regex(
          CONTEXT_STRATEGY_ID,
          'a strategy id is a lowercase letter, then lowercase letters, digits, _ or - (e.g. prefix, window, summarize)',
        )
        .default(DEFAULT_CONTEXT_STRATEGY),
    })
    .strict(),
);

export const agentConfigSchema = once(() =>
  z
    .object({
      /**
       * The guide that explains failures to the model: a shipped one or one a worker's plugin adds. Only
       * its form is checked here; the worker that takes the task checks it has the guide (at submit).
       */
      guide: z
        .string({ error: 'must be a string' })
        .regex(GUIDE_ID_PATTERN, `must be a guide id (${GUIDE_ID_RULE}), e.g. "pain"`)
        .default('pain'),
      /** `"openai:gpt-4o-mini"` as a user writes it, or the `LlmSpec` a parsed config carries. */
      llm: llmSpecSchema().optional(),
      workspace: z
        .array(z.string().min(1).max(4096))
        .min(1, 'workspace needs at least one root')
        .max(32)
        .default(['./workspace']),
      /**
       * The owner's instructions for this agent: placed after the guide's preamble in the system prompt,
       * anchored like it (never out of the window).
       */
      instructions: z
        .string({ error: 'must be a string' })
        .min(1, 'must not be empty')
        .max(16_000, 'must be at most 16000 characters')
        .optional(),
      /** Number of messages kept besides the anchored system prompt and goal. */
      contextWindow: positiveInt(1000).default(40),
      /**
       * Tokens of the target model one LLM call's context may hold: the anchored head always, then the
       * newest turns that fit; a single tool result is cut to half the room. Estimated from bytes,
       * calibrated by the provider's own counts.
       */
      contextTokens: z
        .number({ error: 'must be a number' })
        .int('must be a whole number')
        .min(1000, 'must be >= 1000')
        .max(10_000_000, 'must be <= 10000000')
        .default(64_000),
      /**
       * The seeds' verification step: before a final answer is accepted the model is asked once to check
       * it against the goal. On by default; `false` turns it off.
       */
      verify: z.boolean().default(true),
      safety: safetyConfigSchema().default(() => safetyConfigSchema().parse({})),
      retry: retryConfigSchema().default(() => retryConfigSchema().parse({})),
      tools: toolsConfigSchema().default(() => toolsConfigSchema().parse({})),
      /**
       * What each LLM call sees of the transcript (core/context-strategy.ts): `prefix` (the default: the
       * request grows append-only, then drops the older half at once, so providers bill its repeated
       * beginning at their cached rate), `window` (slides turn by turn), `summarize` (like prefix, the
       * dropped turns replaced by a summary the model writes), or a strategy the worker registered. The
       * worker checks at submit that it has the strategy.
       */
      context: contextConfigSchema().default(() => contextConfigSchema().parse({})),
      /**
       * Prices of this agent's models (core/pricing.ts), over the worker's `STARRY_PRICING`: its entry wins
       * for its model. `{"<provider>:<model>": {inputPerMTok, cachedInputPerMTok, outputPerMTok}}` in USD.
       */
      pricing: pricingSchema().optional(),
      /**
       * A shared budget's name (`starry budget create`): the agent also draws its tokens from it, in leases,
       * and stops (STOPPED, SHARED_BUDGET_EXHAUSTED) with every agent on it when it is spent.
       */
      budget: budgetNameSchema().optional(),
    })
    .strict(),
);

type AgentConfigSchema = ReturnType<typeof agentConfigSchema>;
/** A config as a user writes it: every field optional, `llm` a string (or an `LlmSpec`). */
export type AgentConfigInput = z.input<AgentConfigSchema>;
/** A parsed config: every default filled in, `llm` the typed spec. */
export type AgentConfig = z.output<AgentConfigSchema> & { llm: LlmSpec };
export type SafetyConfig = z.output<ReturnType<typeof safetyConfigSchema>>;
/**
 * A task's config as the edge sends it (`parseTaskConfig`): complete but for `safety`, which holds only
 * the limits the task gives; the agent's own fill in the rest (core/limits.ts). A whole `AgentConfig`
 * is one too, giving every limit.
 */
export type TaskConfig = Omit<AgentConfig, 'safety'> & { safety: Partial<SafetyConfig> };
export type RetryConfig = z.output<ReturnType<typeof retryConfigSchema>>;
export type McpServerConfig = z.output<ReturnType<typeof mcpServerSchema>>;

/** Format zod issues as `path: message` lines. */
export function formatIssues(error: z.ZodError, under: PropertyKey[] = []): string {
  return error.issues
    .map((i) => [...under, ...i.path])
    .map((path, n) => `  - ${path.length ? path.join('.') : '(root)'}: ${error.issues[n]!.message}`)
    .join('\n');
}

/**
 * Validate a raw agent config and fill in the defaults; `defaultLlm` (a spec string or a parsed spec)
 * stands in when the config names no LLM.
 *
 * ```ts
 * const cfg = parseAgentConfig({ safety: { maxTicks: 3 } }, 'scripted:/tmp/turns.json');
 * cfg.llm // { provider: 'scripted', file: '/tmp/turns.json' }
 * ```
 * @throws ConfigError naming every invalid field.
 */
export function parseAgentConfig(raw: unknown, defaultLlm?: string | LlmSpec, origin = 'agent config'): AgentConfig {
  const parsed = agentConfigSchema().safeParse(raw ?? {});
  if (!parsed.success) {
    throw new ConfigError(`Invalid ${origin}:\n${formatIssues(parsed.error)}`, {
      issues: parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
    });
  }
  if (parsed.data.llm) return { ...parsed.data, llm: parsed.data.llm };
  if (defaultLlm === undefined) {
    throw new ConfigError(
      `Invalid ${origin}: no LLM given. Pass --llm (e.g. scripted:FILE, gemini:MODEL) or set "llm".`,
    );
  }
  const llm = llmSpecSchema().safeParse(defaultLlm);
  if (!llm.success)
    throw new ConfigError(`Invalid ${origin}:\n${formatIssues(llm.error)}`, {
      issues: llm.error.issues.map((i) => `llm: ${i.message}`),
    });
  return { ...parsed.data, llm: llm.data };
}

/**
 * Validate a task's config like `parseAgentConfig`, keeping of `safety` only the fields it gives: the
 * agent fills in the others with its own limits, never with defaults that could be looser than them
 * (core/limits.ts). A task's config may only tighten its agent's limits.
 *
 * ```ts
 * const cfg = parseTaskConfig({ safety: { maxTicks: 3 } }, 'scripted:/tmp/turns.json');
 * cfg.safety // { maxTicks: 3 }
 * ```
 * @throws ConfigError naming every invalid field.
 */
export function parseTaskConfig(raw: unknown, defaultLlm?: string | LlmSpec, origin = 'task config'): TaskConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return { ...parseAgentConfig(raw, defaultLlm, origin), safety: {} };
  // The safety fields alone: the cascade pair is checked when both are given (the agent checks the rest).
  const { safety: given, ...rest } = raw as Record<string, unknown>;
  const safety = given === undefined ? { success: true as const, data: {} } : partialSafetySchema().safeParse(given);
  let config: AgentConfig;
  try {
    config = parseAgentConfig(rest, defaultLlm, origin);
  } catch (err) {
    if (safety.success || !(err instanceof ConfigError)) throw err;
    // Every invalid field at once, the safety fields with the others.
    throw new ConfigError(`${err.message}\n${formatIssues(safety.error, ['safety'])}`, {
      issues: [...err.issues, ...safetyIssues(safety.error)],
    });
  }
  if (!safety.success)
    throw new ConfigError(`Invalid ${origin}:\n${formatIssues(safety.error, ['safety'])}`, {
      issues: safetyIssues(safety.error),
    });
  return { ...config, safety: safety.data };
}

const safetyIssues = (error: z.ZodError) => error.issues.map((i) => `${['safety', ...i.path].join('.')}: ${i.message}`);
