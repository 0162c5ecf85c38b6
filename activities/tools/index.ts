/**
 * The tool activity: one Temporal activity runs any registered tool. Execution errors come back as data
 * (a failed ToolExecutionResult, pain for the model); transient and fatal ones are thrown once, through
 * `throwAsFailure`, so Temporal retries or fails the task.
 */
import { Context } from '@temporalio/activity';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AgentConfig } from '../../core/config';
import type { TaskLimits, WorkerPolicy } from '../../core/worker-policy';
import { failure, success, type ToolExecutionResult } from '../../core/errors';
import { toolResultText } from '../../core/transcript';
import { withStore, type TranscriptStore } from '../transcript';
import { validateToolCall, type ToolArgs, type ToolName } from '../../core/tools';
import { retryDelayWithin } from '../../core/provider-errors';
import { throwAsFailure } from '../failures';
import { withHeartbeats } from '../heartbeat';
import type { ToolCallRef } from './call-journal';
import type { ToolContext } from './context';
import { checkPolicy } from './policy-check';
import { reapOrphanedSandboxes } from './confine';
import { listDir, readFile, writeFile } from './fs';
import { httpGet } from './http';
import { runShell } from './shell';
import { ToolError, normalizeThrown } from './tool-error';

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
   * side-effecting tool applies once by. Absent in histories recorded before it: the activity id then.
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

type Handlers = { [N in ToolName]: (args: ToolArgs[N], ctx: ToolContext) => Promise<unknown> };

const HANDLERS: Handlers = {
  'fs.read': readFile,
  'fs.write': writeFile,
  'fs.list': listDir,
  'shell.run': runShell,
  'http.get': httpGet,
};

/** What the activity adds to a call: the worker's policy and the call's stable id. */
export interface RunOptions {
  /** The operator's outer limits; a wider request is refused as a fatal error. */
  policy?: WorkerPolicy;
  call?: ToolCallRef;
}

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
export async function runTool(req: ToolRequest, signal?: AbortSignal, run: RunOptions = {}): Promise<ToolRunResult> {
  const checked = validateToolCall({ id: `tick-${req.tick}`, name: req.name, args: req.args }, req.tools.allow);
  if (!checked.ok) return failure(checked.error);
  const name = req.name as ToolName;
  const ctx: ToolContext = { roots: req.workspace, tools: req.tools, timeoutMs: req.toolTimeoutMs, signal };
  if (run.call) ctx.call = run.call;
  if (run.policy && !run.policy.allowRoot && process.getuid?.() === 0) ctx.dropRoot = true;
  try {
    if (run.policy) await checkPolicy(run.policy, { workspace: req.workspace, tools: req.tools }, name);
    const handler = HANDLERS[name] as (args: unknown, ctx: ToolContext) => Promise<unknown>;
    return success(await handler(checked.args, ctx));
  } catch (err) {
    if (signal?.aborted) throw signal.reason ?? err;
    const result: ToolRunResult = failure(normalizeThrown(err, name));
    if (ToolError.is(err) && err.retryAfterMs !== undefined) result.retryAfterMs = err.retryAfterMs;
    return result;
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
): {
  tool(req: ToolRequest): Promise<ToolExecutionResult>;
  checkTaskLimits(task: TaskLimits): Promise<{ refused?: string }>;
} {
  const journalDir = policy.journalDir ?? path.join(os.tmpdir(), 'starry-tool-journal');
  // Sandboxes a killed predecessor on this host left behind end now, not at their next shell call.
  reapOrphanedSandboxes().catch(() => undefined);
  return {
    async tool(req: ToolRequest): Promise<ToolExecutionResult> {
      const { info, cancellationSignal } = Context.current();
      // The same for every attempt of this call (and for its re-run after a lost worker), for no other call.
      const run = info.workflowExecution;
      const call = run ? { id: `${run.workflowId}/${run.runId}/${req.callId ?? info.activityId}`, journalDir } : undefined;
      const { retryAfterMs, ...result } = await withHeartbeats(runTool(req, cancellationSignal, { policy, ...(call ? { call } : {}) }), { tool: req.name, tick: req.tick });
      // Every failure fails the activity, so the Web UI shows a failed call in red with its error: an
      // execution error is not retried (the workflow feeds it back as pain), a transient one is.
      if (!result.success && result.error !== undefined) {
        throwAsFailure(result.error, { retryAfterMs: retryDelayWithin(retryAfterMs, req.maxRetryDelayMs) });
      }
      const { keep } = req;
      if (keep && transcripts) {
        const text = toolResultText(result.data, keep.maxChars);
        return { success: true, message: await withStore(() => transcripts.keep({ role: 'tool', callId: keep.llmCallId, name: req.name, text })) };
      }
      return result;
    },

    /**
     * The submit-time check (an activity of the agent's submit update): a task whose limits are
     * wider than this worker's policy is refused to its submitter, before it is queued.
     */
    async checkTaskLimits(task: TaskLimits): Promise<{ refused?: string }> {
      try {
        await checkPolicy(policy, task, 'submitTask');
        return {};
      } catch (err) {
        if (ToolError.is(err)) return { refused: err.error.message };
        throw err;
      }
    },
  };
}
