/**
 * The tool activity: one Temporal activity runs any registered tool. Execution errors come back as data
 * (a failed ToolExecutionResult, pain for the model); transient and fatal ones are thrown once, through
 * `throwAsFailure`, so Temporal retries or fails the task.
 */
import type { ApprovalRules } from '../../core/approval';
import { Context } from '@temporalio/activity';
import type { AgentConfig, McpServerConfig, SafetyConfig } from '../../core/config';
import {
  ceilingRefusal,
  DEFAULT_LIMITS,
  pastCeilings,
  mcpCommandEntry,
  withWorkerDefaults,
  type TaskLimits,
  type WorkerPolicy,
} from '../../core/worker-policy';
import { failure, normalizedError, success, type ToolExecutionResult } from '../../core/errors';
import type { ToolSpec } from '../../core/llm';
import type { LlmSpec } from '../../core/llm-spec';
import { lowerPriceRefusal, priceFor, unpricedRefusal, type Price, type PricingTable } from '../../core/pricing';
import { toolResultText } from '../../core/transcript';
import { trace } from '@opentelemetry/api';
import { METRIC, meteredToolName, toolContentAttributes, toolMetricAttributes } from '../../core/telemetry';
import { secondsSince, thrownCode, type ActivityMeter } from '../metrics';
import { withStore, type TranscriptStore } from '../transcript';
import { allowMatches, checkArgs, checkObjectArgs, isToolName } from '../../core/tools';
import { retryDelayWithin } from '../../core/errors/http';
import { throwAsFailure } from '../failures';
import { withHeartbeats } from '../heartbeat';
import { budgetMissing } from '../budget';
import { journalDirOf, type ToolCallRef } from './call-journal';
import type { ToolContext } from './context';
import type { McpSandboxOptions } from './mcp';
import { ToolRegistry } from './registry';
import type { TenantSpace } from './disk';
import { tenantRoots } from '../../core/tenant';
import { activityTenant } from '../tenant';
import { checkPolicy } from './policy-check';
import { Workspace } from './sandbox';
import { guideIds } from '../../core/guides';
import { refusedChoices, type WorkerOffer } from '../../core/plugins';
import { reapOrphanedSandboxes } from './confine';
import { ToolError, messageOf, normalizeOwnThrown, normalizeThrown } from '../../core/errors/activity';

export { defineTool, type ToolDefinition } from './define';
export { ToolRegistry } from './registry';
export type { ToolContext } from './context';
export { ToolError } from '../../core/errors/activity';

/** Input of the tool activity. */
export interface ToolRequest {
  name: string;
  args: unknown;
  /** The task's tick, for the activity summary and logs. */
  tick: number;
  /** Absolute workspace roots. */
  workspace: string[];
  tools: AgentConfig['tools'];
  /** Time one attempt may take (the activity's start-to-close timeout). */
  toolTimeoutMs: number;
  /** The retry policy's maximum interval: a server's `Retry-After` is honoured up to this. */
  maxRetryDelayMs?: number;
  /**
   * The call's place in its task (`t<tick>.<index>`): with the workflow's id and run, the stable id a
   * side-effecting tool applies once by. Absent in a direct call: the activity id then.
   */
  callId?: string;
  /**
   * With the transcript store: keep a successful result as the tool message the LLM will see (the id of
   * the model's call, the result cut to `maxChars`) and return its reference instead of the data.
   */
  keep?: { llmCallId: string; maxChars: number };
}

/** A tool outcome plus, for a transient failure, how long the server asked us to wait. */
export type ToolRunResult = ToolExecutionResult & { retryAfterMs?: number };

/** What the activity adds to a call: the worker's policy, the call's stable id, its tools and heartbeat. */
export interface RunOptions {
  /** The operator's outer limits; a wider request is refused as a fatal error. */
  policy?: WorkerPolicy;
  call?: ToolCallRef;
  /** The worker's tools (default: the built-in ones). */
  registry?: ToolRegistry;
  /** Report progress to Temporal (a tool's `ctx.heartbeat`). */
  heartbeat?: (details?: unknown) => void;
  /** The call's tenant (`tenantOfWorkflowId`), whose space `limits.tenantBytes` bounds; absent: a plain agent's. */
  tenant?: string;
}

let builtinRegistry: ToolRegistry | undefined;

/**
 * Run one tool call and normalize its outcome, without Temporal (unit tests call it directly).
 * Arguments are validated again here: the activity is a boundary and may be called by anything.
 * When `signal` aborts, the promise rejects with the abort reason: a cancelled call is not a failure to
 * feel pain about, it must reach Temporal as a cancellation.
 *
 * ```ts
 * const result = await runTool({ name: 'fs.read', args: { path: 'a.txt' }, tick: 1, workspace: ['/ws'], tools, toolTimeoutMs: 30_000 });
 * if (!result.success) console.log(result.error?.code);
 * ```
 */
export async function runTool(
  req: ToolRequest,
  signal: AbortSignal = new AbortController().signal,
  run: RunOptions = {},
): Promise<ToolRunResult> {
  const registry = run.registry ?? (builtinRegistry ??= new ToolRegistry());
  const { name } = req;
  // What the config leaves unset is this worker's own (its policy's list and cap).
  const tools = withWorkerDefaults(req.tools, run.policy);
  const own = registry.get(name);
  const mcp = own ? undefined : registry.mcpTarget(name, tools);
  const { allow } = tools;
  const refuse = (message: string, suggestion: string) =>
    failure(normalizedError({ code: 'E_UNKNOWN_TOOL', kind: 'execution', source: name, message, suggestion }));
  if (!own && !mcp)
    return refuse(
      `Unknown tool '${name}'.`,
      `Known tools: ${registry
        .specs()
        .map((t) => t.name)
        .join(', ')}.`,
    );
  if (allow && !allow.some((entry) => allowMatches(entry, name)))
    return refuse(`Tool '${name}' is not offered to this agent.`, `Tools you can call: ${allow.join(', ')}.`);
  const builtin = isToolName(name);
  const checked = own ? checkArgs(name, own.input, req.args) : checkObjectArgs(name, req.args);
  if (!checked.ok) return failure(checked.error);
  const { args } = checked;
  const ctx: ToolContext = {
    roots: req.workspace,
    workspace: new Workspace(req.workspace, name),
    signal,
    timeoutMs: req.toolTimeoutMs,
    heartbeat: run.heartbeat ?? (() => undefined),
    callId: run.call?.id ?? req.callId ?? `t${req.tick}`,
    maxOutputBytes: tools.maxOutputBytes,
    tools,
  };
  if (run.call) ctx.call = run.call;
  if (run.policy && !run.policy.allowRoot && process.getuid?.() === 0) ctx.dropRoot = true;
  if (run.policy) ctx.limits = run.policy.limits;
  try {
    if (run.policy) {
      ctx.space = tenantSpace(run.policy, run.tenant);
      await checkPolicy(run.policy, { workspace: req.workspace, tools }, name, ctx.workspace, run.tenant);
    }
    let data: unknown;
    if (own) data = await own.run(args, ctx);
    else {
      const sandbox = mcpSandbox(
        run.policy,
        mcp!.config,
        'command' in mcp!.config ? await ctx.workspace.realRoots() : req.workspace,
        run.tenant,
      );
      data = await registry.mcp.callTool(mcp!.server, mcp!.config, mcp!.tool, args as Record<string, unknown>, {
        cwd: sandbox.roots![0]!,
        signal,
        timeoutMs: req.toolTimeoutMs,
        sandbox,
      });
    }
    // The built-in tools keep to the cap themselves; another tool's result is measured here.
    if (!builtin) checkOutputSize(name, data, tools.maxOutputBytes);
    return success(data);
  } catch (err) {
    if (signal.aborted) throw signal.reason ?? err;
    const result: ToolRunResult = failure(builtin ? normalizeThrown(err, name) : normalizeOwnThrown(err, name));
    if (ToolError.is(err) && err.retryAfterMs !== undefined) result.retryAfterMs = err.retryAfterMs;
    return result;
  }
}

/**
 * What a stdio MCP server's sandbox grants: the task's workspace (real paths), its policy entry's network
 * and read-only directories, the policy's limits, and the tenant's space they bound.
 */
function mcpSandbox(
  policy: WorkerPolicy | undefined,
  config: McpServerConfig,
  roots: string[],
  tenant: string | undefined,
): McpSandboxOptions {
  const entry = policy && 'command' in config ? mcpCommandEntry(policy, config.command, config.args) : undefined;
  return {
    roots,
    network: entry?.network ?? false,
    readOnly: entry?.readOnly ?? [],
    limits: policy?.limits ?? DEFAULT_LIMITS,
    ...(policy ? { space: tenantSpace(policy, tenant) } : {}),
  };
}

/** A tenant's space under the policy's roots (core/tenant.ts): what `limits.tenantBytes` bounds. */
function tenantSpace(policy: WorkerPolicy, tenant: string | undefined): TenantSpace {
  return { roots: tenantRoots(policy.roots, tenant), ...(tenant !== undefined ? { tenant } : {}) };
}

/** A result larger than the task allows is refused, as the built-in tools refuse one. */
function checkOutputSize(name: string, data: unknown, cap: number): void {
  let bytes: number;
  try {
    bytes = data === undefined ? 0 : Buffer.byteLength(typeof data === 'string' ? data : JSON.stringify(data), 'utf8');
  } catch (err) {
    throw ToolError.of({
      code: 'E_INTERNAL',
      kind: 'fatal',
      source: name,
      message: `${name} returned a value that is not JSON: ${messageOf(err)}`,
    });
  }
  if (bytes > cap) {
    throw ToolError.of({
      code: 'E_OUTPUT_TOO_LARGE',
      kind: 'execution',
      source: name,
      message: `E_OUTPUT_TOO_LARGE: ${name} returned ${bytes} bytes; tool output is capped at ${cap} bytes`,
      suggestion: 'Ask for less (a narrower query, fewer items, a page of the result).',
    });
  }
}

/**
 * The Temporal activities for tools. Heartbeats while the tool runs and passes the activity's
 * cancellation signal on; a failed call is thrown as a typed ApplicationFailure (its NormalizedError in the details),
 * retryable only when transient.
 *
 * ```ts
 * const worker = await Worker.create({ activities: { ...createToolActivities(workerPolicyFromEnv()), ...llmActivities }, ... });
 * ```
 */
export function createToolActivities(
  policy: WorkerPolicy,
  transcripts?: TranscriptStore,
  registry: ToolRegistry = new ToolRegistry(),
  options: ToolActivityOptions = {},
): {
  tool(req: ToolRequest): Promise<ToolExecutionResult>;
  listTools(req: ListToolsRequest): Promise<ListedTools>;
  checkTaskLimits(task: SubmittedTask): Promise<TaskLimitsAnswer>;
} {
  const worker: ToolWorker = { policy, registry, options, journalDir: journalDirOf(policy), transcripts };
  // Sandboxes a killed predecessor on this host left behind end now, not at their next shell call.
  reapOrphanedSandboxes().catch(() => undefined);
  return {
    tool: (req) => toolActivity(worker, req),
    listTools: (req) => listToolsActivity(worker, req),
    checkTaskLimits: (task) => checkTaskLimitsActivity(worker, task),
  };
}

/** How a worker's tool activities run, besides its policy and tools. */
export type ToolActivityOptions = {
  traces?: boolean;
  metrics?: ActivityMeter;
  captureContent?: boolean;
  offer?: WorkerOffer;
  /**
   * A tool worker's (`starry worker --tools`): its submit check is the policy's and its tools' only; the
   * workflow worker checked the rest (`refusedByWorkflowWorker`).
   */
  toolsOnly?: boolean;
} & WorkerPrices;

/** What the tool activities of one worker share. */
interface ToolWorker {
  policy: WorkerPolicy;
  registry: ToolRegistry;
  options: ToolActivityOptions;
  journalDir: string;
  transcripts: TranscriptStore | undefined;
}

/**
 * The `tool` activity: one call, heartbeating while it runs and metered; a failure fails the activity,
 * and a result the task keeps in the transcript store comes back as its reference.
 */
async function toolActivity(worker: ToolWorker, req: ToolRequest): Promise<ToolExecutionResult> {
  const { policy, registry, options, journalDir, transcripts } = worker;
  const ctx = Context.current();
  const { info, cancellationSignal } = ctx;
  // The same for every attempt of this call (and for its re-run after a lost worker), for no other call.
  const run = info.workflowExecution;
  const call = run ? { id: `${run.workflowId}/${run.runId}/${req.callId ?? info.activityId}`, journalDir } : undefined;
  const heartbeat = (details?: unknown) => ctx.heartbeat(details ?? { tool: req.name, tick: req.tick });
  const tenant = activityTenant();
  const started = performance.now();
  const meter = options.metrics;
  // Bounded: a task names its MCP servers, and a name of its own must not become a series of its own.
  const metered = meteredToolName(req.name, registry.origin(req.name, req.tools));
  let ran: ToolRunResult;
  try {
    ran = await withHeartbeats(
      runTool(req, cancellationSignal, {
        policy,
        registry,
        heartbeat,
        ...(call ? { call } : {}),
        ...(tenant !== undefined ? { tenant } : {}),
      }),
      { tool: req.name, tick: req.tick },
    );
  } catch (err) {
    const failed = thrownCode(err, cancellationSignal.aborted);
    meter?.record(METRIC.toolDuration, secondsSince(started), toolMetricAttributes(metered, failed));
    throw err;
  }
  const { retryAfterMs, ...result } = ran;
  meter?.record(METRIC.toolDuration, secondsSince(started), toolMetricAttributes(metered, result.error));
  if (options.captureContent)
    trace
      .getActiveSpan()
      ?.setAttributes(toolContentAttributes(req.args, result.success ? result.data : result.error?.message));
  // Every failure fails the activity, so the Web UI shows a failed call in red with its error: an
  // execution error is not retried (the workflow feeds it back as pain), a transient one is.
  if (!result.success && result.error !== undefined) {
    throwAsFailure(result.error, { retryAfterMs: retryDelayWithin(retryAfterMs, req.maxRetryDelayMs) });
  }
  const { keep } = req;
  if (keep && transcripts) {
    const text = toolResultText(result.data, keep.maxChars);
    return {
      success: true,
      message: await withStore(() => transcripts.keep({ role: 'tool', callId: keep.llmCallId, name: req.name, text })),
    };
  }
  return result;
}

/**
 * The `listTools` activity: the tools a task is offered, listed at its start: the worker's own and
 * built-in ones, then those of the config's MCP servers (each server's list is cached by the pool), all
 * that `tools.allow` names, and the commands `shell.run` starts for it (the config's, or this worker's
 * own when it names none). A server that does not start fails the task with its name and what it said.
 */
async function listToolsActivity(
  { policy, registry, options }: ToolWorker,
  req: ListToolsRequest,
): Promise<ListedTools> {
  const { cancellationSignal } = Context.current();
  try {
    const workspace = new Workspace(req.workspace, 'listTools');
    await checkPolicy(policy, { workspace: req.workspace, tools: req.tools }, 'listTools', workspace);
    const specs = registry.specs();
    const tenant = activityTenant();
    for (const [server, config] of Object.entries(req.tools.mcp ?? {})) {
      const roots = 'command' in config ? await workspace.realRoots() : req.workspace;
      const sandbox = mcpSandbox(policy, config, roots, tenant);
      specs.push(
        ...(await registry.mcp.listTools(server, config, {
          cwd: sandbox.roots![0]!,
          signal: cancellationSignal,
          sandbox,
        })),
      );
    }
    const price = req.llm ? priceFor(options.pricing, req.llm) : undefined;
    return {
      specs: offered(specs, req.tools),
      shellAllow: withWorkerDefaults(req.tools, policy).shellAllow,
      ...(policy?.approval ? { approval: policy.approval } : {}),
      ...(price ? { price } : {}),
      ...telemetryOf(options.traces, !!options.metrics),
    };
  } catch (err) {
    if (cancellationSignal.aborted) throw err;
    throwAsFailure(normalizeThrown(err, 'listTools'));
  }
}

/**
 * The `checkTaskLimits` activity, the submit-time check (an activity of the agent's submit update): a
 * task whose limits are wider than this worker's policy, or whose `tools.allow` names a tool the worker
 * does not have, or whose guide or context strategy the worker lacks (workers/plugins.ts), or that has a
 * cost budget but no price for its model (neither its own nor this worker's), is refused to its
 * submitter, before it is queued.
 */
async function checkTaskLimitsActivity(
  { policy, registry, options }: ToolWorker,
  task: SubmittedTask,
): Promise<TaskLimitsAnswer> {
  try {
    await checkPolicy(policy, task, 'submitTask');
  } catch (err) {
    if (ToolError.is(err)) return { refused: err.error.message };
    throw err;
  }
  const past = task.limits ? pastCeilings(policy.agentLimits, task.limits.safety) : [];
  if (task.limits && past.length) return { refused: ceilingRefusal(task.limits.agentId, task.limits.existing, past) };
  const refused =
    registry.refusedAllow(task.tools) ?? (options.toolsOnly ? undefined : await refusedByWorkflowWorker(task, options));
  return refused ? { refused } : {};
}

/**
 * The half of the submit check that belongs to the worker running the workflows and LLM calls: its
 * guides and context strategies (workers/plugins.ts), its price table (a config's own price may not be lower),
 * the shared budget the config names.
 */
export async function refusedByWorkflowWorker(
  task: SubmittedTask,
  { offer = { guides: guideIds() }, pricing }: { offer?: WorkerOffer } & WorkerPrices,
): Promise<string | undefined> {
  const refused =
    refusedChoices(offer, { guide: task.guide, contextStrategy: task.context?.strategy }) ??
    (task.costBudgetUsd !== undefined && task.llm ? unpricedRefusal(task.llm, task.pricing, pricing) : undefined) ??
    (task.llm ? lowerPriceRefusal(task.llm, task.pricing, pricing) : undefined);
  if (refused) return refused;
  // The config's shared budget must exist: a task would otherwise stop at its first LLM call.
  return task.budget ? await budgetMissing(Context.current().client, task.budget) : undefined;
}

/** The worker's price table (`STARRY_PRICING`), which `listTools` and `checkTaskLimits` consult. */
export interface WorkerPrices {
  pricing?: PricingTable;
}

/**
 * What `checkTaskLimits` answers: why the task is refused, if it is; a workflow worker whose tools run on
 * a task queue of their own (`STARRY_TOOL_TASK_QUEUE`) names it, and the agent asks a tool worker there too.
 */
export interface TaskLimitsAnswer {
  refused?: string;
  toolTaskQueue?: string;
}

/**
 * Input of `checkTaskLimits`: the task's limits and tools; (callers since plugins) its guide and context
 * strategy; with a cost budget, the agent's own price table (the worker's is the worker's); its shared
 * budget. The later
 * fields are optional, so a history recorded before them replays.
 */
export type SubmittedTask = TaskLimits & {
  tools: Pick<AgentConfig['tools'], 'allow' | 'mcp' | 'approval'>;
  guide?: string;
  context?: { strategy?: string };
  costBudgetUsd?: number;
  pricing?: PricingTable;
  /** The shared budget the config names, by its full name (`<tenant>:<name>` for a tenant's agent). */
  budget?: string;
  /** The limits the task would run with (its agent's, or a new agent's first), for the policy's `agentLimits`. */
  limits?: { agentId: string; existing: boolean; safety: SafetyConfig };
};

/** Input of the `listTools` activity: the task's workspace and tool settings, and its LLM (to price it). */
export interface ListToolsRequest {
  workspace: string[];
  tools: AgentConfig['tools'];
  llm?: LlmSpec;
}

/** What the `listTools` activity answers: the tools offered, and the commands `shell.run` starts for this task. */
export interface ListedTools {
  specs: ToolSpec[];
  shellAllow: string[];
  /** The worker's own approval rules (its policy's `approval`), which the task obeys besides its config's. */
  approval?: ApprovalRules;
  /**
   * Present when this worker traces (workers/otel.ts) or meters (workers/metrics.ts): the task turns its
   * spans or its counters on from this answer, which its history keeps, so a replay decides the same.
   */
  telemetry?: { traces?: true; metrics?: true };
  /** The price of the task's LLM in this worker's table (`STARRY_PRICING`), when it has one. */
  price?: Price;
  /**
   * Present when the workflow worker runs no tool code (`STARRY_TOOL_TASK_QUEUE`): its answer lists no
   * tools but names the queue where tool workers list them and run the calls. The history keeps it, so a
   * replay routes the same.
   */
  toolTaskQueue?: string;
}

/** The `telemetry` of a `listTools` answer: whether the worker running the workflows traces and meters. */
export function telemetryOf(traces?: boolean, metrics?: boolean): Pick<ListedTools, 'telemetry'> {
  if (!traces && !metrics) return {};
  return {
    telemetry: { ...(traces ? { traces: true as const } : {}), ...(metrics ? { metrics: true as const } : {}) },
  };
}

/**
 * The specs `tools.allow` offers, within what one task may carry (they travel in its history and in
 * the first LLM call of every run). An exact entry that no tool answers to is a config error.
 */
function offered(specs: ToolSpec[], tools: AgentConfig['tools']): ToolSpec[] {
  const { allow } = tools;
  const chosen = allow ? specs.filter((spec) => allow.some((entry) => allowMatches(entry, spec.name))) : specs;
  const missing = (allow ?? []).filter((entry) => !entry.endsWith('.*') && !specs.some((spec) => spec.name === entry));
  if (missing.length) {
    throw ToolError.of({
      code: 'E_UNKNOWN_TOOL',
      kind: 'fatal',
      source: 'listTools',
      message:
        `tools.allow names ${missing.map((m) => `'${m}'`).join(', ')}, which no tool of this worker or of its MCP ` +
        `servers answers to (they offer: ${specs.map((s) => s.name).join(', ')})`,
      suggestion: 'Fix the name in tools.allow (or use server.* for every tool of an MCP server).',
    });
  }
  const bytes = Buffer.byteLength(JSON.stringify(chosen), 'utf8');
  if (chosen.length > OFFERED_TOOLS_MAX || bytes > OFFERED_SPECS_MAX_BYTES) {
    throw ToolError.of({
      code: 'E_OUTPUT_TOO_LARGE',
      kind: 'fatal',
      source: 'listTools',
      message:
        `the task is offered ${chosen.length} tools whose schemas take ${Math.ceil(bytes / 1024)} KB; ` +
        `a task takes at most ${OFFERED_TOOLS_MAX} tools and ${OFFERED_SPECS_MAX_BYTES / 1024} KB of schemas`,
      suggestion: 'Name the tools this agent needs in tools.allow.',
    });
  }
  return chosen;
}

/** Tools one task may be offered, and the bytes of their specs: a model does badly with more anyway. */
export const OFFERED_TOOLS_MAX = 128;
export const OFFERED_SPECS_MAX_BYTES = 64 * 1024;
