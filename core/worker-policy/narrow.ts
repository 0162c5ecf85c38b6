/**
 * Narrowing a task's config to the worker's policy: a config may only narrow it, and `narrowToPolicy`
 * refuses anything wider, naming each field (docs/ARCHITECTURE.md, "Trust boundary"); what a config
 * leaves unset is the worker's own (`withWorkerDefaults`).
 */
import type { LlmSpec } from '../llm-spec';
import { RefusedError } from '../errors';
import { tenantRoots } from '../tenant';
import { hostEntryWithin, isHostAllowed } from './hosts';
import { mcpServerRefusals, type McpServerSpec } from './mcp-rules';
import { absoluteWithin, isWithin, normalizePosix } from './paths';
import { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_SHELL_ALLOW, type WorkerPolicy } from './schema';

/** The parts of a task's config the policy bounds. */
export interface TaskLimits {
  workspace: string[];
  /** The LLM: its endpoint or file must be one the policy allows. */
  llm?: LlmSpec;
  tools: {
    /** Unset: the worker's own list (`withWorkerDefaults`), which always lies within its policy. */
    shellAllow?: string[];
    httpAllow: string[];
    /** Unset: the default or the worker's cap, whichever is lower. */
    maxOutputBytes?: number;
    mcp?: Record<string, McpServerSpec>;
  };
}

/**
 * A task's tool settings with what its config leaves unset filled in by the worker that runs it: the
 * policy's own `shellAllow`, and the default output cap or the policy's, whichever is lower. A default
 * is never wider than the worker: a config that says nothing always lies within the policy. Without a
 * policy (a tool run outside a worker), the worker defaults.
 *
 * ```ts
 * withWorkerDefaults({ httpAllow: [] }, parseWorkerPolicy({ roots: ['/srv'], shellAllow: ['ls'], maxOutputBytes: 1000 }))
 * // { httpAllow: [], shellAllow: ['ls'], maxOutputBytes: 1000 }
 * ```
 */
export function withWorkerDefaults<T extends { shellAllow?: string[]; httpAllow: string[]; maxOutputBytes?: number }>(
  tools: T,
  policy?: Pick<WorkerPolicy, 'shellAllow' | 'maxOutputBytes'>,
): T & { shellAllow: string[]; maxOutputBytes: number } {
  return {
    ...tools,
    shellAllow: tools.shellAllow ?? policy?.shellAllow ?? DEFAULT_SHELL_ALLOW,
    maxOutputBytes:
      tools.maxOutputBytes ?? Math.min(DEFAULT_MAX_OUTPUT_BYTES, policy?.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES),
  };
}

/**
 * Check that a task's limits lie within the policy and return them unchanged, or refuse naming each
 * wider field (an unset `shellAllow` or `maxOutputBytes` is the worker's own, so never wider). Roots are compared
 * lexically here (the tool activity compares realpaths again). A tenant's task may use only the tenant's
 * part of the roots (`<root>/<tenant>`, core/tenant.ts), for its workspace and its script alike.
 *
 * ```ts
 * narrowToPolicy(policy, { workspace: ['/srv/ws/a'], tools }) // ok when policy.roots includes '/srv/ws'
 * narrowToPolicy(policy, { workspace: ['/srv/ws/t2/a'], tools }, 't1') // refused: not in /srv/ws/t1
 * ```
 * @throws RefusedError listing every field wider than the policy, with what the policy allows.
 */
export function narrowToPolicy<T extends TaskLimits>(policy: WorkerPolicy, task: T, tenant?: string): T {
  const wider: string[] = [];
  const roots = tenantRoots(policy.roots, tenant);
  for (const root of task.workspace) {
    if (!root.startsWith('/') || !roots.some((allowed) => isWithin(normalizePosix(root), allowed))) {
      wider.push(`workspace: '${root}' is not inside ${rootsShown(roots, tenant)}`);
    }
  }
  const commands = (task.tools.shellAllow ?? []).filter((c) => !policy.shellAllow.includes(c));
  if (commands.length) {
    wider.push(
      `tools.shellAllow: ${commands.map((c) => `'${c}'`).join(', ')} not allowed by the worker (allowed: ${policy.shellAllow.join(', ') || 'none'})`,
    );
  }
  const hosts = task.tools.httpAllow.filter((h) => !hostEntryWithin(h, policy.httpAllow));
  if (hosts.length) {
    wider.push(
      `tools.httpAllow: ${hosts.map((h) => `'${h}'`).join(', ')} not allowed by the worker (allowed: ${policy.httpAllow.join(', ') || 'none'})`,
    );
  }
  for (const [server, spec] of Object.entries(task.tools.mcp ?? {}))
    wider.push(...mcpServerRefusals(policy, server, spec));
  const llm = task.llm === undefined ? undefined : llmSpecProblem(task.llm, policy, tenant);
  if (llm) wider.push(`llm: ${llm}`);
  if (task.tools.maxOutputBytes !== undefined && task.tools.maxOutputBytes > policy.maxOutputBytes) {
    wider.push(`tools.maxOutputBytes: ${task.tools.maxOutputBytes} is above the worker's cap ${policy.maxOutputBytes}`);
  }
  if (wider.length) throw new RefusedError(widerThanPolicy(wider), { issues: wider });
  return task;
}

/** The roots a refusal names: the worker's, or a tenant's part of them. */
export function rootsShown(roots: readonly string[], tenant: string | undefined): string {
  return tenant === undefined
    ? `a root the worker allows (${roots.join(', ')})`
    : `tenant ${tenant}'s part of the roots the worker allows (${roots.join(', ')})`;
}

/**
 * The refusal of a config wider than the policy, each wider field on a line, and what helps: a config
 * within the policy (a field left out is the worker's own), or a wider policy.
 *
 * ```ts
 * widerThanPolicy(["tools.shellAllow: 'sh' not allowed by the worker (allowed: ls)"])
 * ```
 */
export function widerThanPolicy(wider: string[]): string {
  return (
    `The task's config is wider than the worker's policy; a task may only narrow it:\n${wider.map((w) => `  - ${w}`).join('\n')}\n` +
    "Submit the task with a config within the policy (tools.shellAllow and tools.maxOutputBytes left out are the worker's own), or ask the worker operator to widen STARRY_WORKER_POLICY."
  );
}

/**
 * Why the policy does not allow the `llm` spec, or undefined: an OpenAI-compatible base URL must have a
 * host of `llmAllow`; a script must be an absolute path inside `roots` (a tenant's: its part of them) or
 * `llmDirs`; a model only inside `llmDirs` and outside every root, since the model runtime is native
 * code that parses the file and a task writes anything under the roots (compared lexically here; the
 * activity compares what it opened). Gemini's and Bedrock's endpoint, region and credentials are the
 * worker's alone, so a spec cannot name one (which Bedrock models the worker may call is its IAM role's to say).
 *
 * ```ts
 * llmSpecProblem(parseLlmSpec('openai:gpt@http://10.0.0.9/v1'), policy) // "the host of 'http://10.0.0.9/v1' is not one …"
 * ```
 */
export function llmSpecProblem(
  spec: LlmSpec,
  policy: Pick<WorkerPolicy, 'roots' | 'llmAllow' | 'llmDirs'>,
  tenant?: string,
): string | undefined {
  switch (spec.provider) {
    case 'openai': {
      if (spec.baseUrl === undefined) return undefined; // the worker's own endpoint
      let url: URL;
      try {
        url = new URL(spec.baseUrl);
      } catch {
        return `'${spec.baseUrl}' is not a URL`;
      }
      if (isHostAllowed(url, policy.llmAllow)) return undefined;
      return `the host of '${spec.baseUrl}' is not one the worker's LLM calls may reach (llmAllow: ${policy.llmAllow.join(', ') || 'none'})`;
    }
    case 'scripted': {
      const dirs = scriptDirs(policy, tenant);
      if (absoluteWithin(spec.file, dirs)) return undefined;
      return `the script '${spec.file}' is not an absolute path inside a directory the worker reads scripts from (${dirs.join(', ')})`;
    }
    case 'local': {
      const file = spec.modelPath;
      if (absoluteWithin(file, policy.llmDirs) && !absoluteWithin(file, policy.roots)) return undefined;
      const inRoot = absoluteWithin(file, policy.roots)
        ? ', and never one inside a workspace root, where tasks write'
        : '';
      return `the model '${file}' is not an absolute path inside a directory the worker loads models from (llmDirs: ${policy.llmDirs.join(', ') || 'none'})${inRoot}`;
    }
    case 'gemini':
    case 'bedrock':
      return undefined;
  }
}

/** Where `scripted:` files may be read from for a tenant's task: its part of the roots, then `llmDirs`. */
export function scriptDirs(policy: Pick<WorkerPolicy, 'roots' | 'llmDirs'>, tenant?: string): string[] {
  return [...tenantRoots(policy.roots, tenant), ...policy.llmDirs];
}
