/**
 * Agent configuration (docs/ARCHITECTURE.md#configuration), validated once at the edge with zod. Workflows receive the parsed,
 * fully-defaulted `AgentConfig` and never validate again.
 */
import { z } from 'zod';
import { guideIds } from './guides';
import { parseLlmSpec } from './llm-spec';
import { ConfigError } from './request-errors';
import { TOOL_NAMES } from './tools';
import { DEFAULT_SHELL_ALLOW } from './worker-policy';

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

export const ToolsConfigSchema = z
  .object({
    /** Commands `shell.run` may start (the first word of the command line). */
    shellAllow: z.array(z.string().min(1).max(256)).max(100).default(DEFAULT_SHELL_ALLOW),
    /** Hosts `http.get` may reach. */
    httpAllow: z.array(z.string().min(1).max(2048)).max(100).default([]),
    /** Bytes of tool output kept at most; more is E_OUTPUT_TOO_LARGE. */
    maxOutputBytes: positiveInt(1024 * 1024).default(64 * 1024),
    /** The tools this agent is offered (absent: every tool); a call to another is E_UNKNOWN_TOOL pain. */
    allow: z
      .array(z.enum(TOOL_NAMES, { error: (i) => `unknown tool ${JSON.stringify(i.input)}: use one of ${TOOL_NAMES.join(', ')}` }))
      .min(1, 'allow needs at least one tool (leave it out to offer every tool)')
      .max(100)
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
