/**
 * The worker's policy: the outer limits of every tool call, set by whoever runs the worker (its own
 * environment or a file), never by whoever submits a task. A task's config may only narrow them:
 * `narrowToPolicy` refuses anything wider, naming each field (docs/ARCHITECTURE.md, "Trust boundary").
 * Pure: the worker reads the policy (workers/env.ts) and the tool activity applies it.
 *
 * Its parts are modules of core/worker-policy/: the schema (schema.ts), narrowing a task's config to it
 * (narrow.ts), the ceilings on every agent's limits (narrow-limits.ts), the sandbox's limits (sandbox-limits.ts), host entries (hosts.ts), the MCP servers' rules
 * (mcp-rules.ts) and the environment's (env-rules.ts), paths (paths.ts) and the roots at start (roots.ts).
 */
export { changesCodeLoading, ENV_TEMPLATE } from './worker-policy/env-rules';
export { isHostAllowed } from './worker-policy/hosts';
export { mcpCommandEntry, type McpCommandPolicy } from './worker-policy/mcp-rules';
export {
  llmSpecProblem,
  narrowToPolicy,
  rootsShown,
  scriptDirs,
  widerThanPolicy,
  withWorkerDefaults,
  type TaskLimits,
} from './worker-policy/narrow';
export { ceilingRefusal, pastCeilings, type AgentLimits, type LimitPastCeiling } from './worker-policy/narrow-limits';
export { isWithin, normalizePosix } from './worker-policy/paths';
export { runsToolCalls, unusableRootsRefusal, type RootProblem, type RootsSource } from './worker-policy/roots';
export {
  DEFAULT_LIMITS,
  describeLimit,
  formatBytes,
  SandboxLimitsSchema,
  type LimitName,
  type SandboxLimits,
} from './worker-policy/sandbox-limits';
export {
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_SHELL_ALLOW,
  parseWorkerPolicy,
  WorkerPolicySchema,
  type WorkerPolicy,
  type WorkerPolicyInput,
} from './worker-policy/schema';
