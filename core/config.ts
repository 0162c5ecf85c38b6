/**
 * Agent configuration (docs/ARCHITECTURE.md#configuration), validated once at the edge with zod. Workflows receive the parsed,
 * fully-defaulted `AgentConfig` and never validate again.
 */
import { z } from 'zod';
import { guideIds } from './guides';
import { parseLlmSpec } from './llm-spec';
import { ConfigError } from './errors';
import { isValidToolName, TOOL_NAMES } from './tools';

export { ConfigError };

/**
 * A whole number in 1..max. Zod puts the field's path in front of each issue, so the messages do not
 * repeat it. The upper bounds keep payloads and histories inside Temporal's limits (docs/ARCHITECTURE.md).
 */
const positiveInt = (max: number) =>
  z.number({ error: 'must be a number' }).int('must be a whole number').positive('must be > 0').max(max, `must be <= ${max}`);

export const SafetyConfigSchema = z
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
  })
  .strict()
  .refine((s) => s.cascadeErrors <= s.cascadeWindow, {
    message: 'cascadeErrors must be <= cascadeWindow',
    path: ['cascadeErrors'],
  });

export const RetryConfigSchema = z
  .object({
    initialIntervalMs: positiveInt(3_600_000).default(1000),
    backoffCoefficient: z.number({ error: 'must be a number' }).min(1, 'must be >= 1').max(10, 'must be <= 10').default(2),
    maximumIntervalMs: positiveInt(3_600_000).default(30_000),
    maximumAttempts: positiveInt(100).default(5),
  })
  .strict();

/** The prefixes of the built-in tools (`fs`, `shell`, `http`): no MCP server takes one. */
const BUILTIN_PREFIXES = new Set(TOOL_NAMES.map((name) => name.split('.')[0]!));

/**
 * Where `${env:NAME}` is allowed: header and environment values are templates filled in on the worker
 * from its own environment, so secrets stay out of configs and histories.
 */
const workerTemplate = z.string().max(4096);

/**
 * An MCP server: a program the worker starts (stdio; the command must be on the worker's
 * `mcpCommands`) or a Streamable HTTP endpoint (its host must be on the worker's `httpAllow`).
 */
export const McpServerSchema = z.union(
  [
    z
      .object({
        command: z.string().min(1).max(1024),
        args: z.array(z.string().max(4096)).max(64).default([]),
        /** Environment of the server, besides PATH and HOME: values may use `${env:NAME}` of the worker. */
        env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), workerTemplate).optional(),
      })
      .strict(),
    z
      .object({
        url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
        /** Request headers: values may use `${env:NAME}` of the worker (`"Authorization": "Bearer ${env:TOKEN}"`). */
        headers: z.record(z.string().min(1).max(256), workerTemplate).optional(),
      })
      .strict(),
  ],
  { error: 'an MCP server is {command, args?, env?} (stdio) or {url, headers?} (Streamable HTTP)' },
);
export type McpServerConfig = z.output<typeof McpServerSchema>;

export const ToolsConfigSchema = z
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
          error: (i) => `${JSON.stringify(i.input)} is not a tool name (e.g. ${TOOL_NAMES.slice(0, 2).join(', ')}, or github.* for every tool of the MCP server github)`,
        }),
      )
      .min(1, 'allow needs at least one tool (leave it out to offer every tool)')
      .max(100)
      .optional(),
    /** MCP servers whose tools this agent is offered as `<server>.<tool>`; the worker's policy allows each. */
    mcp: z
      .record(z.string(), McpServerSchema)
      .refine((servers) => Object.keys(servers).length <= 16, 'at most 16 MCP servers')
      .superRefine((servers, ctx) => {
        for (const name of Object.keys(servers).filter((s) => !/^[A-Za-z][A-Za-z0-9_-]{0,31}$/.test(s))) {
          ctx.addIssue({ code: 'custom', path: [name], message: `${JSON.stringify(name)}: an MCP server name is a letter, then letters, digits, _ or - (at most 32)` });
        }
      })
      .refine((servers) => !Object.keys(servers).some((s) => BUILTIN_PREFIXES.has(s)), {
        error: () => `an MCP server may not be named like a built-in tool's prefix (${[...BUILTIN_PREFIXES].join(', ')})`,
      })
      .optional(),
  })
  .strict();

export const AgentConfigSchema = z
  .object({
    guide: z
      .string()
      .refine((id) => guideIds().includes(id), { error: (i) => `unknown guide ${JSON.stringify(i.input)}: use one of ${guideIds().join(', ')}` })
      .default('pain'),
    llm: z.string().superRefine(checkLlmSpec).optional(),
    workspace: z.array(z.string().min(1).max(4096)).min(1, 'workspace needs at least one root').max(32).default(['./workspace']),
    /**
     * The owner's instructions for this agent: placed after the guide's preamble in the system prompt,
     * anchored like it (never out of the window).
     */
    instructions: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(16_000, 'must be at most 16000 characters').optional(),
    /** Number of messages kept besides the anchored system prompt and goal. */
    contextWindow: positiveInt(1000).default(40),
    /**
     * Tokens of the target model one LLM call's context may hold: the anchored head always, then the
     * newest turns that fit; a single tool result is cut to half the room. Estimated from bytes,
     * calibrated by the provider's own counts.
     */
    contextTokens: z.number({ error: 'must be a number' }).int('must be a whole number').min(1000, 'must be >= 1000').max(10_000_000, 'must be <= 10000000').default(64_000),
    /**
     * The seeds' verification step: before a final answer is accepted the model is asked once to check
     * it against the goal. On by default; `false` turns it off.
     */
    verify: z.boolean().default(true),
    safety: SafetyConfigSchema.default(() => SafetyConfigSchema.parse({})),
    retry: RetryConfigSchema.default(() => RetryConfigSchema.parse({})),
    tools: ToolsConfigSchema.default(() => ToolsConfigSchema.parse({})),
  })
  .strict();

export type AgentConfigInput = z.input<typeof AgentConfigSchema>;
export type AgentConfig = z.output<typeof AgentConfigSchema> & { llm: string };
export type SafetyConfig = z.output<typeof SafetyConfigSchema>;
export type RetryConfig = z.output<typeof RetryConfigSchema>;

/** The `llm` spec, checked inside the schema so every client (CLI, HTTP, a raw update) gets the same error. */
function checkLlmSpec(spec: string, ctx: z.RefinementCtx): void {
  try {
    parseLlmSpec(spec);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
}

/** Format zod issues as `path: message` lines. */
export function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `  - ${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('\n');
}

/**
 * Validate a raw agent config and fill in the defaults.
 *
 * ```ts
 * const cfg = parseAgentConfig({ safety: { maxTicks: 3 } }, 'scripted:/tmp/turns.json');
 * ```
 * @throws ConfigError naming every invalid field.
 */
export function parseAgentConfig(raw: unknown, defaultLlm?: string, origin = 'agent config'): AgentConfig {
  const parsed = AgentConfigSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    throw new ConfigError(`Invalid ${origin}:\n${formatIssues(parsed.error)}`, {
      issues: parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
    });
  }
  const llm = parsed.data.llm ?? defaultLlm;
  if (!llm) {
    throw new ConfigError(`Invalid ${origin}: no LLM given. Pass --llm (e.g. scripted:FILE, gemini:MODEL) or set "llm".`);
  }
  return { ...parsed.data, llm };
}
