/**
 * Agent configuration (DESIGN.md §6), validated once at the edge with zod. Workflows receive the parsed,
 * fully-defaulted `AgentConfig` and never validate again.
 */
import { z } from 'zod';

const positiveInt = (name: string) =>
  z.number({ error: `${name} must be a number` }).int(`${name} must be a whole number`).positive(`${name} must be > 0`);

export const SafetyConfigSchema = z
  .object({
    maxTicks: positiveInt('safety.maxTicks').default(50),
    tokenBudget: positiveInt('safety.tokenBudget').default(100_000),
    repeatThreshold: positiveInt('safety.repeatThreshold').default(3),
    frustrationThreshold: positiveInt('safety.frustrationThreshold').default(5),
    cascadeWindow: positiveInt('safety.cascadeWindow').default(10),
    cascadeErrors: positiveInt('safety.cascadeErrors').default(8),
    toolTimeoutMs: positiveInt('safety.toolTimeoutMs').default(30_000),
    /** Tokens an LLM call may produce at most, before the budget cap applies. */
    maxOutputTokens: positiveInt('safety.maxOutputTokens').default(8192),
  })
  .strict()
  .refine((s) => s.cascadeErrors <= s.cascadeWindow, {
    message: 'safety.cascadeErrors must be <= safety.cascadeWindow',
  });

export const RetryConfigSchema = z
  .object({
    initialIntervalMs: positiveInt('retry.initialIntervalMs').default(1000),
    backoffCoefficient: z.number().min(1, 'retry.backoffCoefficient must be >= 1').default(2),
    maximumIntervalMs: positiveInt('retry.maximumIntervalMs').default(30_000),
    maximumAttempts: positiveInt('retry.maximumAttempts').default(5),
  })
  .strict();

export const ToolsConfigSchema = z
  .object({
    /** Commands `shell.run` may start (the first word of the command line). */
    shellAllow: z.array(z.string().min(1)).default(['ls', 'cat', 'echo', 'pwd', 'wc', 'head', 'tail', 'grep', 'sleep']),
    /** Hosts `http.get` may reach. */
    httpAllow: z.array(z.string().min(1)).default([]),
    /** Bytes of tool output kept at most; more is E_OUTPUT_TOO_LARGE. */
    maxOutputBytes: positiveInt('tools.maxOutputBytes').default(64 * 1024),
  })
  .strict();

export const AgentConfigSchema = z
  .object({
    guide: z.string().min(1).default('pain'),
    llm: z.string().min(1).optional(),
    workspace: z.array(z.string().min(1)).min(1, 'workspace needs at least one root').default(['./workspace']),
    /** Number of messages kept besides the anchored system prompt and goal. */
    contextWindow: positiveInt('contextWindow').default(40),
    /** Ask the model to verify before its final answer is accepted (the seeds' verification step). */
    verify: z.boolean().default(false),
    safety: SafetyConfigSchema.default(() => SafetyConfigSchema.parse({})),
    retry: RetryConfigSchema.default(() => RetryConfigSchema.parse({})),
    tools: ToolsConfigSchema.default(() => ToolsConfigSchema.parse({})),
  })
  .strict();

export type AgentConfigInput = z.input<typeof AgentConfigSchema>;
export type AgentConfig = z.output<typeof AgentConfigSchema> & { llm: string };
export type SafetyConfig = z.output<typeof SafetyConfigSchema>;
export type RetryConfig = z.output<typeof RetryConfigSchema>;

/** A config error that says where and what, so a user can fix the file. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
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
    throw new ConfigError(`Invalid ${origin}:\n${formatIssues(parsed.error)}`);
  }
  const llm = parsed.data.llm ?? defaultLlm;
  if (!llm) {
    throw new ConfigError(`Invalid ${origin}: no LLM given. Pass --llm (e.g. scripted:FILE, gemini:MODEL) or set "llm".`);
  }
  return { ...parsed.data, llm };
}
