/**
 * The package's public entry (`import … from 'openstarry-temporal'`), documented in docs/LIBRARY.md:
 * the client, the worker factory, the tool API and the types a caller handles. Only re-exports: the
 * code lives in its own module, and anything not listed here is internal and may change.
 */

// ---- the client: submit tasks, wait for results, read state, halt, unlock, message --------------------
export {
  AgentClient,
  NoWorkerError,
  SearchAttributesMissingError,
  type AgentClientOptions,
  type SubmitInput,
} from './client/agent-client';
export type { TaskListing } from './client/reads';
export { connectClient, temporalEnv, TASK_QUEUE, type TemporalEnv } from './client/connection';
// Shared budgets (the Budget Manager): `agents.budgets()` creates, raises and shows them.
export { BudgetClient, type BudgetCreate, type BudgetRaise, type BudgetStatus } from './client/budget-client';
export {
  ConfigError,
  InvalidArgumentError,
  isRequestError,
  NotFoundError,
  PermissionDeniedError,
  RefusedError,
  RequestError,
  type RequestErrorType,
} from './core/errors';

// ---- the worker: the workflows and activities on a task queue, with the operator's policy ---------------
export {
  createToolWorker,
  createWorker,
  type CreateToolWorkerOptions,
  type CreateWorkerOptions,
} from './workers/worker';
export { connectWorker } from './workers/connection';
export { checkWorkspaceRoots, toolWorkerConfigFromEnv, workerConfigFromEnv, type WorkerConfig } from './workers/env';
export { runWorker } from './workers/main';
export type { MakeCurrent, VersioningOptions } from './workers/versioning';
export { installWorkerLogger } from './workers/log';
export { parseWorkerPolicy, type WorkerPolicy, type WorkerPolicyInput } from './core/worker-policy';
export { costUsd, parsePricing, priceFor, type Price, type PricingTable } from './core/pricing';
// A server the package did not start needs the search attributes the workflows write (once per namespace).
export { ensureSearchAttributes } from './dev/dev-server';
export { SEARCH_ATTRIBUTES } from './workflows/search-attributes';

// ---- the tool API: a worker's own tools ----------------------------------------------------------------
export { defineTool, ToolError, type ToolContext, type ToolDefinition } from './activities/tools';

// ---- guides and worker plugins (their modules import `openstarry-temporal/plugins`, docs/LIBRARY.md#plugins)
export { defineGuide, type Guide, type GuideSpec, type PainContext, type SafetyAlert } from './core/guides';
export type { WorkerPlugin } from './core/plugins';

// ---- agent configuration -------------------------------------------------------------------------------
export {
  parseAgentConfig,
  parseTaskConfig,
  type AgentConfig,
  type TaskConfig,
  type AgentConfigInput,
  type McpServerConfig,
  type RetryConfig,
  type SafetyConfig,
} from './core/config';

// ---- context strategies: what each LLM call sees (docs/LIBRARY.md#your-own-context-strategy) -------------
export {
  checkedPlan,
  contextStrategyIds,
  getContextStrategy,
  prefixStrategy,
  summarizeStrategy,
  windowStrategy,
  type ContextPlan,
  type ContextStrategy,
  type ContextView,
} from './core/context-strategy';
export { windowStart, entriesTokens, entryBytes, type WindowLimits } from './core/context';

// ---- human approval of tool calls (docs/ARCHITECTURE.md#human-approval) ----------------------------------
export {
  approvalVerdict,
  type ApprovalConfig,
  type ApprovalDecision,
  type ApprovalRule,
  type ApprovalRules,
  type PendingApproval,
} from './core/approval';

// ---- the error taxonomy --------------------------------------------------------------------------------
export { ERROR_CODES, type ErrorCode, type ErrorKind, type NormalizedError } from './core/errors';

// ---- what the client returns (the result contract, docs/ARCHITECTURE.md#result-json) --------------------
export { isLocked, LOCKED_STATES } from './core/types';
export type {
  AgentList,
  AgentState,
  ApprovalList,
  AgentStatus,
  CancelledTask,
  HaltInput,
  Injection,
  InjectionKind,
  LockReason,
  LockReasonCode,
  LimitsInput,
  LimitsRecord,
  LimitsResult,
  MessageResult,
  SubmitTaskResult,
  TaskOutcome,
  TaskResult,
  ToolCallRecord,
  UnlockInput,
  UnlockRecord,
  UnlockResult,
} from './core/contract';
