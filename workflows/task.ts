/**
 * The task workflow: one agent task's tick loop (docs/ARCHITECTURE.md#workflows). It orchestrates only:
 * `TaskRun` (core/task-run.ts) keeps the books and decides each step, activities act (LLM, tools).
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { createActivities } from '../activities';
import { llmLabel, parseLlmSpec } from '../core/llm-spec';
import { LIMITS } from '../core/contract';
import type { LlmResponse } from '../core/llm';
import type { ToolExecutionResult } from '../core/errors';
import { TaskRun, type TaskEnd, type TaskRunInput, type TaskRunOutput } from '../core/task-run';
import type { AgentState, TaskOutcome } from '../core/types';
import { factsOf, isWorkerLoss } from './activity-facts';
import { changesOfThisRun, type Changes } from './changes';
import { TASK_FAILED, haltSignal, messageSignal, taskEndedSignal, taskProgressQuery, taskProgressSignal, taskStateQuery } from './messages';
import { AgentIdKey, AgentStateKey, LastErrorCodeKey, LockReasonKey, TickIndexKey, TokensUsedKey } from './search-attributes';

export type { TaskRunInput, TaskRunOutput } from '../core/task-run';

type Activities = ReturnType<typeof createActivities>;

/** Patch: a call whose worker was lost is run again (before it, the loss was the call's failure). */
const RERUN_AFTER_WORKER_LOSS = 'rerun-after-worker-loss';
/** Patch: a cancellation request halts the task, which ends CANCELED after sending its output to the agent. */
const CANCEL_IS_HALT = 'cancel-is-halt';

/**
 * Patch: the transcript lives in the content store (LLM calls carry a context delta of references, tool
 * results come back stored) and the task continues as new when Temporal suggests it.
 */
const TRANSCRIPT_STORE = 'transcript-store';

/** Patch: the per-tick progress signal to the agent is not waited for. */
const PROGRESS_IN_BACKGROUND = 'progress-in-background';

/** Patch: the agent hears of a task's progress every few ticks, not every tick (clients query the task). */
const PROGRESS_SPARSE = 'progress-sparse';

/** Patch: a report upserts only the search attributes whose value changed. */
const UPSERT_CHANGED_ONLY = 'upsert-changed-only';

/** Patch: a report that changes only the tick and token counts writes them every few ticks (`progressDue`). */
const COUNTS_SPARSE = 'search-attribute-counts-sparse';

/**
 * Patch: the task asks its worker which tools it offers (built-in, the worker's own, the config's MCP
 * servers) before its first tick, instead of knowing only the built-in ones.
 */
const WORKER_TOOLS = 'worker-tools';

/**
 * Patch: every change above at once (`changesOfThisRun`). A task started since records this one marker
 * instead of one per change; those first met at the third workflow task cost it a visibility write of
 * its own.
 */
const ALL_CHANGES = 'task-changes-2026-11';

/**
 * Run one task: ticks of context → LLM → tools until a final answer, a breaker, a halt or a failure.
 */
export async function taskWorkflow(input: TaskRunInput): Promise<TaskRunOutput> {
  const { config } = input;
  const { safety } = config;
  const spec = parseLlmSpec(config.llm);
  const has = changesOfThisRun(ALL_CHANGES);
  const llmOptions: ActivityOptions = {
    // Configs recorded before llmTimeoutMs existed keep the old 10 minutes.
    startToCloseTimeout: safety.llmTimeoutMs ?? '10 minutes',
    heartbeatTimeout: '10 seconds',
    retry: {
      initialInterval: config.retry.initialIntervalMs,
      backoffCoefficient: config.retry.backoffCoefficient,
      maximumInterval: config.retry.maximumIntervalMs,
      maximumAttempts: config.retry.maximumAttempts,
    },
    // Wait for the activity to acknowledge a cancellation, so the history proves it stopped.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  };
  const toolOptions: ActivityOptions = { ...llmOptions, startToCloseTimeout: safety.toolTimeoutMs };
  const { llm, tool } = proxyActivities<Activities>(llmOptions);
  // A local activity: the listing is short and the worker running this workflow has the tools, so it
  // costs the task no extra workflow task (and no round trip through the server) before its first tick.
  const { listTools } = proxyLocalActivities<Activities>({ startToCloseTimeout: safety.toolTimeoutMs, retry: llmOptions.retry, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED });
  const store = has(TRANSCRIPT_STORE);
  const run = new TaskRun(input, workflowInfo().workflowId, { store });
  // The tick loop runs in this scope, so the halt signal can cancel the call in flight. The loop runs
  // in it once, not each call: entering a scope costs the workflow thread promises (each traced by the
  // SDK's stack-trace hooks) at every call, and no call starts after a halt. The progress signal to the
  // agent is sent from the root scope, where it always was: the halt signal does not cancel it.
  const calls = new CancellationScope();

  // SYSTEM_HALT reaches a task as a cancellation request from its agent (a human may also cancel the
  // task workflow in the Web UI): the run is halted, its call in flight cancelled (the call's scope is
  // a child of this one), and the workflow ends CANCELED, so the Web UI shows what happened.
  const root = CancellationScope.current();
  let cancelIsHalt = false;
  root.cancelRequested.catch(() => {
    if (!has(CANCEL_IS_HALT)) return;
    cancelIsHalt = true;
    run.halt();
  });
  const halted = () => run.halted || cancelIsHalt;

  // The halt signal of agents from before CANCEL_IS_HALT; a message is checked like at the agent, and bounded per run.
  setHandler(haltSignal, () => {
    run.halt();
    calls.cancel();
  }, { description: 'Stop this task now: cancels the call in flight and ends the task (SYSTEM_HALT sent to the agent does this for you). Payload {by?, note?}.' });
  setHandler(
    messageSignal,
    (raw) => {
      const refused = run.receive(raw);
      if (refused) log.warn('ignored a message signal', { reason: refused });
    },
    { description: 'A human follow-up {text, by?} (sent by its agent): appended before the next LLM call.' },
  );
  setHandler(taskProgressQuery, () => run.progress(), {
    description: 'The task’s live counts: tick, tokens (this run and in all), counters, last error code.',
  });
  setHandler(taskStateQuery, () => run.status(), {
    description: 'The task so far: everything its result has yet, its counters, the last error code and whether a halt arrived.',
  });

  /**
   * Run an activity so that SYSTEM_HALT can cancel it, and run it again when its worker was lost
   * mid-call: a dead worker is not the call's pain (side-effecting tools apply a call once, by its id).
   */
  // Not an async function: a `catch` is one promise a call, an async function's await two.
  function cancellable<T>(what: string, fn: () => Promise<T>, lost = 0): Promise<T> {
    return fn().catch((err: unknown) => {
      if (halted() || !isWorkerLoss(err) || lost >= LIMITS.workerLossReruns || !has(RERUN_AFTER_WORKER_LOSS)) throw err;
      log.warn('the worker running this call was lost (heartbeats stopped): running the call again, not counted as a failure', { call: what, lost: lost + 1 });
      return cancellable(what, fn, lost + 1);
    });
  }

  const finish = (end: TaskEnd): TaskRunOutput => {
    const out = run.close(end);
    report(has, run, end.agentState, out.result.reason?.code, end.outcome);
    if (end.outcome === 'FAILED') {
      // The workflow itself fails (red in the Web UI), carrying the transcript to the agent.
      throw ApplicationFailure.create({ type: TASK_FAILED, message: end.error?.message ?? 'task failed', nonRetryable: true, details: [out] });
    }
    return out;
  };

  async function ticks(): Promise<TaskRunOutput> {
    report(has, run, 'EXECUTING');
    // A run that continued as new carries its tools in its input.
    if (!input.tools && has(WORKER_TOOLS)) {
      try {
        const listed = await cancellable('tools', () => listTools({ workspace: config.workspace, tools: config.tools }));
        run.offer(listed.specs, listed.shellAllow);
      } catch (err) {
        if (halted() && isCancellation(err)) return finish(run.cancelled());
        return finish(run.setupFailed(factsOf(err, 'listTools').error));
      }
    }
    for (;;) {
      const info = workflowInfo();
      // A long task moves to a fresh history between ticks, everything it counted carried over.
      if (store && info.continueAsNewSuggested && !halted()) await continueAsNew<typeof taskWorkflow>(run.continuation());
      const stop = run.startTick({ events: info.historyLength, bytes: info.historySize });
      if (stop) return finish(stop);

      const call = run.llmCall();
      if ('end' in call) return finish(call.end);
      let response: LlmResponse;
      try {
        const { tick } = call.request;
        response = await cancellable(`llm · tick ${tick}`, () => llm.executeWithOptions({ ...llmOptions, summary: `llm ${llmLabel(spec)} · tick ${tick}` }, [call.request]));
      } catch (err) {
        if (halted() && isCancellation(err)) return finish(run.cancelled());
        // A retryable LLM error that ran out of attempts is still the provider's error, as it was.
        return finish(run.llmFailed(factsOf(err, `llm ${spec.provider}`).error));
      }
      const next = run.llmAnswered(response);
      if ('end' in next) return finish(next.end);
      if ('verify' in next) {
        const sent = reportProgress(has, run, root);
        if (sent) await sent;
        continue;
      }

      for (const [index, toolCall] of next.calls.entries()) {
        const step = run.beforeTool(toolCall);
        if (!step.run) continue;
        const { tick } = step.pending.record;
        let result: ToolExecutionResult;
        try {
          result = await cancellable(step.summary, () =>
            tool.executeWithOptions({ ...toolOptions, summary: step.summary }, [
              {
                name: toolCall.name,
                args: step.args,
                tick,
                callId: `t${tick}.${index}`,
                workspace: config.workspace,
                tools: config.tools,
                toolTimeoutMs: safety.toolTimeoutMs,
                maxRetryDelayMs: config.retry.maximumIntervalMs,
                ...(store ? { keep: { llmCallId: toolCall.id, maxChars: run.resultChars(next.calls.length) } } : {}),
              },
            ]),
          );
        } catch (err) {
          if (halted() && isCancellation(err)) {
            // The turn's remaining calls are recorded as skipped (none starts); the task ends after the loop.
            run.toolCancelled(step.pending);
            continue;
          }
          const fatal = run.toolFailed(step.pending, factsOf(err, toolCall.name));
          if (fatal) return finish(fatal);
          continue;
        }
        run.afterTool(step.pending, result);
      }
      const end = run.endTurn();
      if (end) return finish(end);
      report(has, run, 'EXECUTING');
      const sent = reportProgress(has, run, root);
      if (sent) await sent;
    }
  }

  let out: TaskRunOutput;
  try {
    out = await calls.run(ticks);
  } catch (err) {
    // A cancellation that arrived at an await outside a call (between calls, sending progress).
    if (!(cancelIsHalt && isCancellation(err))) throw err;
    out = finish(run.cancelled());
  }
  if (cancelIsHalt && out.result.outcome === 'CANCELLED') {
    // A cancelled workflow carries no result: the agent gets the output by signal first (it may be gone).
    await CancellationScope.nonCancellable(() => sendToAgent((parent) => getExternalWorkflowHandle(parent).signal(taskEndedSignal, out)));
    throw new CancelledFailure('SYSTEM_HALT: the task was halted');
  }
  return out;
}

/** Live state for the Web UI and the agent's `state` query. */
function report(has: Changes, run: TaskRun, agentState: AgentState, lockReason?: string, closedAs?: TaskOutcome): void {
  const closing = closedAs !== undefined;
  const cp = run.checkpoint;
  const updates: SearchAttributeUpdatePair[] = [
    { key: AgentIdKey, value: run.input.agentId },
    // A closed task drops AgentState, so `AgentState="SAFETY_LOCKOUT"` never lists tasks of agents
    // that were unlocked since: the agent workflow carries its live state.
    { key: AgentStateKey, value: closing ? null : agentState },
    { key: TickIndexKey, value: cp.ticks },
    { key: TokensUsedKey, value: cp.tokensUsed },
    ...(run.lastErrorCode ? [{ key: LastErrorCodeKey, value: run.lastErrorCode }] : []),
    ...(lockReason ? [{ key: LockReasonKey, value: lockReason }] : []),
  ];
  // Only what changed: a tick then records its tick and tokens, not the agent's id and state again.
  const current = workflowInfo().typedSearchAttributes;
  const changed = has(UPSERT_CHANGED_ONLY) ? updates.filter((u) => (current.get(u.key) ?? null) !== u.value) : updates;
  // The counts alone wait for the ticks the agent hears of them too; a new state, error code or lock
  // reason, and the close, are written at once, with the counts.
  const countsOnly = changed.length > 0 && !closing && changed.every((u) => u.key === TickIndexKey || u.key === TokensUsedKey);
  const wait = countsOnly && !run.progressDue() && has(COUNTS_SPARSE);
  if (changed.length && !wait) upsertSearchAttributes(changed);
  setCurrentDetails(run.details(agentState, lockReason, closedAs));
}

/**
 * The tick's progress to the agent, every `PROGRESS_EVERY_TICKS` ticks, sent alongside the next LLM
 * call instead of before it: waiting for the signal's delivery cost every tick a workflow task and a
 * round trip of its own, and each report costs the agent a workflow task. The agent ignores a progress
 * report that arrives after its task ended; clients read the live counts from the task's `progress` query.
 */
function reportProgress(has: Changes, run: TaskRun, root: CancellationScope): Promise<void> | undefined {
  const send = () => root.run(() => sendProgress(run));
  if (!has(PROGRESS_IN_BACKGROUND)) return send();
  // Nothing to wait for: no promise either (each costs the workflow thread a traced stack).
  if (has(PROGRESS_SPARSE) && !run.progressDue()) return undefined;
  send().catch(() => undefined);
  return Promise.resolve();
}

/** The tick's progress to the agent. */
async function sendProgress(run: TaskRun): Promise<void> {
  await sendToAgent((parent) => getExternalWorkflowHandle(parent).signal(taskProgressSignal, run.progress()));
}

/** Signal the parent agent, best effort: the agent may have closed (halted, continued-as-new). */
async function sendToAgent(send: (parentWorkflowId: string) => Promise<void>): Promise<void> {
  const parent = workflowInfo().parent;
  if (!parent) return;
  try {
    await send(parent.workflowId);
  } catch (err) {
    if (isCancellation(err)) throw err;
  }
}
