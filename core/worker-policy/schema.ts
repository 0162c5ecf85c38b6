/**
 * The worker's policy as its operator writes it (its environment or a file): the schema, its defaults,
 * and the check that names every invalid field.
 */
import { z } from 'zod';
import { approvalRulesSchema } from '../approval';
import { partialSafetySchema } from '../config';
import { ConfigError } from '../errors';
import { McpEnvSchema, mcpEnvBindingIssues } from '../mcp-env';
import { McpCommandSchema } from './mcp-rules';
import { absolutePath } from './paths';
import { SandboxLimitsSchema } from './sandbox-limits';

/** The shell commands a worker allows when its operator says nothing. */
export const DEFAULT_SHELL_ALLOW = ['ls', 'cat', 'echo', 'pwd', 'wc', 'head', 'tail', 'grep', 'sleep'];

/** The tool output a task keeps when its config says nothing, unless the worker's cap is lower. */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024;

export const WorkerPolicySchema = z
  .object({
    /** Directories a task's workspace roots must lie in (a root may be one of them or below one). */
    roots: z.array(absolutePath).min(1, 'needs at least one root'),
    /** Commands a task may allow `shell.run` to start. */
    shellAllow: z.array(z.string().min(1)).default(DEFAULT_SHELL_ALLOW),
    /** Host entries a task may allow `http.get` to reach (as `tools.httpAllow`, plus `host:*` for any port). */
    httpAllow: z.array(z.string().min(1)).default([]),
    /**
     * Programs a task's config may start as stdio MCP servers (`tools.mcp.<server>.command`), each with
     * what its sandbox grants (network, read-only directories, env names a config may set); none by default.
     */
    mcpCommands: z.array(McpCommandSchema).default([]),
    /**
     * The worker's environment variables a task's config may pass to its MCP servers as `${env:NAME}`
     * (in `env` or `headers`); none by default, so a config cannot send the worker's secrets anywhere.
     * An entry `{name, hosts?, commands?}` binds the variable to the MCP URLs of those hosts and the
     * stdio servers of those pinned `mcpCommands` entries: a token goes only where its operator meant it to.
     */
    mcpEnv: z.array(McpEnvSchema).default([]),
    /** The largest `tools.maxOutputBytes` a task may ask for. */
    maxOutputBytes: z
      .number()
      .int()
      .positive()
      .max(1024 * 1024)
      .default(1024 * 1024),
    /** `shell.run` may run programs as root when the worker does (otherwise as `nobody`); MCP servers never do. */
    allowRoot: z.boolean().default(false),
    /** Where side-effecting tools journal their calls (default: `tool-journal` in the worker's state folder, `.temporal/`). */
    journalDir: absolutePath.optional(),
    /**
     * Hosts a task's `openai:MODEL@BASE_URL` may name (entries as `httpAllow`). The worker's own
     * endpoint (`OPENAI_BASE_URL`, where its key goes) is added by the worker; no other host ever
     * receives the key.
     */
    llmAllow: z.array(z.string().min(1)).default([]),
    /** Directories `scripted:FILE` scripts and `local:FILE.gguf` models may be read from, besides `roots`. */
    llmDirs: z.array(absolutePath).default([]),
    /**
     * Calls every task on this worker must have approved by a human (`ask`) or may never make (`deny`),
     * on top of the task's own `tools.approval`: e.g. `{"ask": ["shell.run"]}`.
     */
    approval: approvalRulesSchema().optional(),
    /**
     * Ceilings on every agent's limits (its config's `safety` fields), a new agent's first task
     * included: a submit whose task would run with a looser value is refused, naming the field and the
     * ceiling (narrow-limits.ts). E.g. `{"tokenBudget": 200000, "costBudgetUsd": 5}`.
     */
    agentLimits: partialSafetySchema().optional(),
    /** Resource limits of every sandboxed program and of a task's workspace (sandbox-limits.ts). */
    limits: SandboxLimitsSchema.prefault({}),
  })
  .strict()
  // A secret bound to a command with free args would reach any code: refused here, naming the entry.
  .superRefine((policy, ctx) => {
    for (const { path, message } of mcpEnvBindingIssues(policy.mcpEnv, policy.mcpCommands))
      ctx.addIssue({ code: 'custom', path, message });
  });

export type WorkerPolicyInput = z.input<typeof WorkerPolicySchema>;
export type WorkerPolicy = z.output<typeof WorkerPolicySchema>;

/**
 * Validate a raw policy and fill in the defaults.
 *
 * @throws ConfigError naming every invalid field.
 */
export function parseWorkerPolicy(raw: unknown, origin = 'worker policy'): WorkerPolicy {
  const parsed = WorkerPolicySchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  - ${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`);
    throw new ConfigError(`Invalid ${origin}:\n${lines.join('\n')}`);
  }
  return parsed.data;
}
