/**
 * The task workflow: one agent task's tick loop (docs/ARCHITECTURE.md#workflows). It orchestrates only:
 * `TaskRun` (core/task-run.ts) keeps the books and decides each step, activities act (LLM, tools).
 * Pinned to the Worker Deployment Version it started on (workflows/index.ts): it never meets other code.
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  ContinueAsNew,
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
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { Activities } from '../activities';
import type { ToolExecutionResult } from '../core/errors';
import { budgetRefFor, LeaseHolder, sharedBudgetLock } from '../core/budget';
import type { LlmCallInput, LlmResponse } from '../core/llm';
import { llmLabel } from '../core/llm-spec';
import { LIMITS } from '../core/payloads';
import { costUsd, priceFor } from '../core/pricing';
import { approvalDecisionSchema } from '../core/approval';
import { callIdOf, TaskRun, type TaskEnd, type TaskRunInput, type TaskRunOutput } from '../core/task-run';
import {
  chatResultAttributes,
  chatSpan,
  continueAsNewEvent,
  errorType,
  remoteSpan,
  SPAN,
  taskSpanAttributes,
  toolSpan,
} from '../core/telemetry';
import type { AgentState, TaskOutcome } from '../core/types';
import { factsOf, isWorkerLoss } from './activity-facts';
import { noToolWorkerError, notPicked, TOOL_CALL_START_TIMEOUT, TOOL_QUEUE_START_TIMEOUT } from './tool-queue';
import {
  TASK_FAILED,
  approvalDecidedSignal,
  approvalsSignal,
  haltSignal,
  messageSignal,
  taskEndedSignal,
  taskProgressQuery,
  taskProgressSignal,
  taskStateQuery,
  taskStatusQuery,
} from './messages';
import { searchAttributes, TickIndexKey, TokensUsedKey } from './search-attributes';
import {
  addCounts,
  addEvents,
  classifyTaskFailure,
  enableMetrics,
  enableTracing,
  inSpan,
  markFailed,
  markFailedWith,
  metricsEnabled,
  startContext,
  tracingEnabled,
  type MaybeSpan,
} from './telemetry';

export type { TaskRunInput, TaskRunOutput } from '../core/task-run';

/**
 * Run one task: ticks of context → LLM → tools until a final answer, a breaker, a halt or a failure.
 */
export async function taskWorkflow(input: TaskRunInput): Promise<TaskRunOutput> {
  const { config } = input;
  const options = callOptions(input);
  const { llm, tool, summarize, listTools: listOnToolQueue } = proxyActivities<Activities>(options.llm);
  // A local activity: the listing is short and the worker running this workflow has the tools, so it
  // costs the task no extra workflow task (and no round trip through the server) before its first tick.
  const { listTools, budgetLease } = proxyLocalActivities<Activities>(options.listTools);
  // The tool activities' own queue, when the workflow worker's listing named one (carried when the task
  // continues as new): there the listing and every tool call go, waiting only so long for a tool worker.
  let toolQueue = input.toolTaskQueue;
  const onToolQueue = (opts: ActivityOptions, wait: Duration): ActivityOptions =>
    toolQueue ? { ...opts, taskQueue: toolQueue, scheduleToStartTimeout: wait } : opts;
  const run = new TaskRun(input, workflowInfo().workflowId, { store: true });
  // A shared budget (config `budget`): the task draws from it in leases (docs/ARCHITECTURE.md#budget-manager).
  const lease = config.budget
    ? new LeaseHolder(
        input.lease ?? LeaseHolder.fresh(budgetRefFor(input.agentId, config.budget)),
        workflowInfo().workflowId,
      )
    : undefined;
  // The tick loop runs in this scope, so the halt signal can cancel the call in flight. The loop runs
  // in it once, not each call: entering a scope costs the workflow thread promises at every call, and
  // no call starts after a halt. Progress to the agent goes from the root scope, which a halt signal
  // does not cancel.
  const calls = new CancellationScope();
  listen(run, calls);

  // SYSTEM_HALT reaches a task as a cancellation request from its agent (a human may also cancel the
  // task workflow in the Web UI): the run is halted, its call in flight cancelled (the call's scope is
  // a child of this one), and the workflow ends CANCELED, so the Web UI shows what happened.
  const root = CancellationScope.current();
  let cancelled = false;
  root.cancelRequested.catch(() => {
    cancelled = true;
    run.halt();
  });
  const halted = () => run.halted || cancelled;

  /**
   * Run an activity so that SYSTEM_HALT can cancel it, and run it again when its worker was lost
   * mid-call: a dead worker is not the call's pain (side-effecting tools apply a call once, by its id).
   */
  // Not an async function: a `catch` is one promise a call, an async function's await two.
  function cancellable<T>(what: string, fn: () => Promise<T>, lost = 0): Promise<T> {
    return fn().catch((err: unknown) => {
      if (halted() || !isWorkerLoss(err) || lost >= LIMITS.workerLossReruns) throw err;
      log.warn(
        'the worker running this call was lost (heartbeats stopped): running the call again, not counted as a failure',
        { call: what, lost: lost + 1 },
      );
      return cancellable(what, fn, lost + 1);
    });
  }

  /** A tool activity's facts; one no tool worker picked up says which queue and what to start. */
  const toolFacts = (err: unknown, source: string): ReturnType<typeof factsOf> =>
    toolQueue && notPicked(err)
      ? { error: noToolWorkerError(toolQueue, source), retriesExhausted: false }
      : factsOf(err, source);

  // The task's span (workflows/telemetry.ts), once the worker said it traces; TaskRun's facts become its
  // events, and their counts the worker's counters once it said it meters.
  let taskSpan: MaybeSpan;
  const flush = (call?: MaybeSpan) => {
    addEvents(run.drainEvents(), taskSpan, call);
    addCounts(run.drainCounts());
  };

  /**
   * Before an LLM call, with a shared budget: the lease must cover what the call may send and its output
   * cap, else the budget is asked (a local activity: one marker event, no extra workflow task); the
   * output is capped to what the lease holds. A refusal stops the task (STOPPED, SHARED_BUDGET_EXHAUSTED).
   */
  async function coverCall(held: LeaseHolder, request: LlmCallInput): Promise<TaskEnd | undefined> {
    const sends = run.inputEstimate();
    let step = held.before(sends, request.maxOutputTokens, Date.now());
    if ('ask' in step) {
      const ask = { budget: held.data.budget, updateId: held.nextUpdateId(workflowInfo().runId), request: step.ask };
      const got = await cancellable(`budget ${held.data.budget}`, () => budgetLease(ask));
      step =
        'missing' in got
          ? { lock: sharedBudgetLock(got.missing) }
          : held.answered(got.answer, sends, request.maxOutputTokens);
    }
    if ('lock' in step) return run.lockedBy(step.lock);
    if ('maxOutputTokens' in step) request.maxOutputTokens = step.maxOutputTokens;
    return undefined;
  }

  /** At the task's end (any outcome but a continue-as-new): the lease's unused part goes back to the budget. */
  async function returnLease(): Promise<void> {
    const request = lease?.release();
    if (!lease || !request) return;
    const ask = { budget: lease.data.budget, updateId: lease.nextUpdateId(workflowInfo().runId), request };
    await CancellationScope.nonCancellable(async () => {
      try {
        await budgetLease(ask);
        lease.returned();
      } catch (err) {
        log.warn('could not return the lease to its budget: it returns when it expires', {
          budget: ask.budget,
          error: String(err),
        });
      }
    });
  }

  const finish = (end: TaskEnd): TaskRunOutput => {
    flush();
    if (taskSpan) {
      taskSpan.setAttribute('starry.task.outcome', end.outcome);
      const reason = end.lock?.reason ?? end.reason;
      if (reason) taskSpan.setAttribute('starry.task.reason', reason.code);
      if (end.outcome === 'FAILED') markFailedWith(taskSpan, errorType(end.error), end.error?.message ?? 'task failed');
    }
    const out = run.close(end);
    addCounts(run.drainCounts()); // the outcome, and the lockout when the run locked its agent
    report(run, end.agentState, out.result.reason?.code, end.outcome);
    if (end.outcome === 'FAILED') {
      // The workflow itself fails (red in the Web UI), carrying the transcript to the agent.
      throw ApplicationFailure.create({
        type: TASK_FAILED,
        message: end.error?.message ?? 'task failed',
        nonRetryable: true,
        details: [out],
      });
    }
    return out;
  };

  async function ticks(): Promise<TaskRunOutput> {
    report(run, 'EXECUTING');
    // A run that continued as new carries its tools in its input.
    if (!input.tools) {
      try {
        const request = { workspace: config.workspace, tools: config.tools, llm: config.llm };
        const listed = await cancellable('tools', () => listTools(request));
        let tools: Pick<typeof listed, 'specs' | 'shellAllow' | 'approval'> = listed;
        if (listed.toolTaskQueue) {
          // The workflow worker runs no tool code: a tool worker lists the tools; the price and the
          // telemetry stay the workflow worker's.
          toolQueue = listed.toolTaskQueue;
          tools = await cancellable('tools', () =>
            listOnToolQueue.executeWithOptions(onToolQueue(options.listOnToolQueue, TOOL_QUEUE_START_TIMEOUT), [
              request,
            ]),
          );
        }
        run.offer(tools.specs, tools.shellAllow, tools.approval);
        // The agent's price for its model wins over the worker's; the answer is in the history, so a replay prices alike.
        run.priced(priceFor(config.pricing, config.llm) ?? listed.price);
        // The worker's answer is in the history: a replay turns tracing and metrics on (or not) the same way.
        if (listed.telemetry?.traces) enableTracing();
        if (listed.telemetry?.metrics) enableMetrics();
      } catch (err) {
        if (halted() && isCancellation(err)) return finish(run.cancelled());
        return finish(run.setupFailed(toolFacts(err, 'listTools').error));
      }
    } else {
      if (input.traced) enableTracing();
      if (input.metered) enableMetrics();
    }
    // One trace per task: a new task's span is a root (linked to whoever started it, when traced); a run
    // that continued as new is a child of the run before it.
    const first = !workflowInfo().continuedFromExecutionRunId;
    const from = startContext();
    const attributes = taskSpanAttributes({ ...input, llm: config.llm });
    // A new task's span links to whoever started it: a traced client's context, else the submitter's traceparent.
    const caller = {
      ...(from ? { link: from } : {}),
      ...(input.traceparent ? { linkTo: remoteSpan(input.traceparent) } : {}),
    };
    const placed = first ? { root: true, ...caller } : from ? { parent: from } : {};
    return inSpan(
      { name: SPAN.task, attributes, ...placed },
      (span) => {
        taskSpan = span;
        if (span) run.traceId = span.spanContext().traceId;
        return loop();
      },
      classifyTaskFailure,
    );
  }

  async function loop(): Promise<TaskRunOutput> {
    for (;;) {
      const info = workflowInfo();
      // A long task moves to a fresh history between ticks, everything it counted carried over.
      if (info.continueAsNewSuggested && !halted()) {
        flush();
        addEvents([continueAsNewEvent(run.checkpoint.ticks, info.historyLength)], taskSpan);
        await continueAsNew<typeof taskWorkflow>({
          ...run.continuation(),
          ...(tracingEnabled() ? { traced: true } : {}),
          ...(metricsEnabled() ? { metered: true } : {}),
          ...(lease ? { lease: lease.data } : {}),
          ...(toolQueue ? { toolTaskQueue: toolQueue } : {}),
        });
      }
      const stop = run.startTick({ events: info.historyLength, bytes: info.historySize });
      if (stop) return finish(stop);

      // The `summarize` context strategy, when this tick's window drops turns: a call of its own first
      // (only then: other strategies add no command). A summary that fails costs the task nothing but
      // the summary: the window drops the turns without one.
      const summary = run.summaryDue();
      if (summary) {
        try {
          const written = await cancellable(`summarize · tick ${summary.tick}`, () =>
            summarize.executeWithOptions(
              { ...options.llm, summary: `summarize ${llmLabel(config.llm)} · tick ${summary.tick}` },
              [summary],
            ),
          );
          run.summarized(written);
          // The summary's tokens are the shared budget's too: charged to the lease like a tick's call.
          lease?.charge(written.usage.inputTokens + written.usage.outputTokens);
        } catch (err) {
          if (halted() && isCancellation(err)) return finish(run.cancelled());
          const { error } = factsOf(err, `summarize ${config.llm.provider}`);
          log.warn('the summary call failed: the oldest turns leave the context without a summary', {
            tick: summary.tick,
            code: error.code,
            message: error.message,
          });
          run.summaryFailed(error, summary);
        }
      }

      const call = run.llmCall();
      if ('end' in call) return finish(call.end);
      if (lease) {
        let end: TaskEnd | undefined;
        try {
          end = await coverCall(lease, call.request);
        } catch (err) {
          if (halted() && isCancellation(err)) return finish(run.cancelled());
          return finish(run.llmFailed(factsOf(err, `budget ${lease.data.budget}`).error));
        }
        if (end) return finish(end);
      }
      let response: LlmResponse;
      try {
        const { tick } = call.request;
        response = await inSpan(
          { ...chatSpan(config.llm, tick, call.request.maxOutputTokens), kind: 'client' },
          async (span) => {
            const answer = await cancellable(`llm · tick ${tick}`, () =>
              llm.executeWithOptions({ ...options.llm, summary: `llm ${llmLabel(config.llm)} · tick ${tick}` }, [
                call.request,
              ]),
            );
            const { price } = run.input;
            span?.setAttributes(chatResultAttributes(answer, price ? costUsd(answer.usage, price) : undefined));
            return answer;
          },
        );
      } catch (err) {
        if (halted() && isCancellation(err)) return finish(run.cancelled());
        // A retryable LLM error that ran out of attempts is still the provider's error.
        return finish(run.llmFailed(factsOf(err, `llm ${config.llm.provider}`).error));
      }
      lease?.charge(response.usage.inputTokens + response.usage.outputTokens);
      const next = run.llmAnswered(response);
      if ('end' in next) return finish(next.end);
      if ('verify' in next) {
        reportProgress(run, root);
        continue;
      }

      // Calls that need a human wait, all of the turn's together, before any of them runs.
      if (run.askApprovals(next.calls, Date.now()).length) {
        flush();
        try {
          await awaitApprovals(run, halted);
        } catch (err) {
          // A halt ends the wait: the turn's calls are recorded as never run, and the task ends CANCELED.
          if (!(halted() && isCancellation(err))) throw err;
        }
      }
      for (const [index, toolCall] of next.calls.entries()) {
        const step = run.beforeTool(toolCall, index);
        if (!step.run) {
          flush();
          continue;
        }
        const { tick } = step.pending.record;
        const callId = callIdOf(tick, index);
        const fatal = await inSpan(toolSpan(toolCall.name, callId, tick), async (span) => {
          let result: ToolExecutionResult;
          try {
            result = await cancellable(step.summary, () =>
              tool.executeWithOptions(
                { ...onToolQueue(options.tool, TOOL_CALL_START_TIMEOUT), summary: step.summary },
                [
                  {
                    name: toolCall.name,
                    args: step.args,
                    tick,
                    callId,
                    workspace: config.workspace,
                    tools: config.tools,
                    toolTimeoutMs: config.safety.toolTimeoutMs,
                    maxRetryDelayMs: config.retry.maximumIntervalMs,
                    keep: { llmCallId: toolCall.id, maxChars: run.resultChars(next.calls.length) },
                  },
                ],
              ),
            );
          } catch (err) {
            markFailed(span, err);
            if (halted() && isCancellation(err)) {
              // The turn's remaining calls are recorded as skipped (none starts); the task ends after the loop.
              run.toolCancelled(step.pending);
              return undefined;
            }
            const end = run.toolFailed(step.pending, toolFacts(err, toolCall.name));
            flush(span);
            return end;
          }
          run.afterTool(step.pending, result);
          flush(span);
          return undefined;
        });
        if (fatal) return finish(fatal);
      }
      const end = run.endTurn();
      flush();
      if (end) return finish(end);
      report(run, 'EXECUTING');
      reportProgress(run, root);
    }
  }

  let out: TaskRunOutput;
  try {
    out = await calls.run(ticks);
  } catch (err) {
    // A cancellation that arrived at an await outside a call.
    if (!(cancelled && isCancellation(err))) {
      // A FAILED task (or a broken one) returns its lease too; a continuing one carries it.
      if (!(err instanceof ContinueAsNew)) await returnLease();
      throw err;
    }
    out = finish(run.cancelled());
  }
  await returnLease();
  if (cancelled && out.result.outcome === 'CANCELLED') {
    // A cancelled workflow carries no result: the agent gets the output by signal first (it may be gone).
    await CancellationScope.nonCancellable(() =>
      sendToAgent((parent) => getExternalWorkflowHandle(parent).signal(taskEndedSignal, out)),
    );
    throw new CancelledFailure('SYSTEM_HALT: the task was halted');
  }
  return out;
}

/**
 * Wait durably for the humans' decisions on the turn's waiting calls: nothing runs and no worker holds
 * anything meanwhile (a timer and the decisions the agent forwards are all there is). The agent lists
 * them (and alerts) when told; a call whose time runs out counts as denied.
 */
async function awaitApprovals(run: TaskRun, halted: () => boolean): Promise<void> {
  report(run, 'WAITING_FOR_APPROVAL');
  tellAgent(run);
  let expired = false;
  while (run.waitingApprovals().length && !halted()) {
    const left = run.approvalTimeLeft(Date.now());
    if (left > 0) await condition(() => !run.waitingApprovals().length || halted(), left);
    const before = run.waitingApprovals().length;
    run.expireApprovals(Date.now());
    expired ||= run.waitingApprovals().length < before;
  }
  if (halted()) return;
  // The agent took every decision itself; it hears only of the calls that expired.
  if (expired) tellAgent(run);
  report(run, 'EXECUTING');
}

/** The agent's copy of the waiting calls, not waited for (its handler lists them and alerts once per call). */
function tellAgent(run: TaskRun): void {
  const waiting = run.waitingApprovals();
  CancellationScope.nonCancellable(() =>
    sendToAgent((parent) =>
      getExternalWorkflowHandle(parent).signal(approvalsSignal, { taskId: run.input.taskId, waiting }),
    ),
  ).catch(() => undefined);
}

/** The activities' options: the config's timeouts and retry policy; a cancellation waits for the activity. */
function callOptions({ config }: TaskRunInput): {
  llm: ActivityOptions;
  tool: ActivityOptions;
  listTools: LocalActivityOptions;
  /** The listing on a tool worker (it sends no heartbeats: an MCP server may take a while to start). */
  listOnToolQueue: ActivityOptions;
} {
  const common = {
    retry: {
      initialInterval: config.retry.initialIntervalMs,
      backoffCoefficient: config.retry.backoffCoefficient,
      maximumInterval: config.retry.maximumIntervalMs,
      maximumAttempts: config.retry.maximumAttempts,
    },
    // Wait for the activity to acknowledge a cancellation, so the history proves it stopped.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  };
  const llm: ActivityOptions = {
    ...common,
    startToCloseTimeout: config.safety.llmTimeoutMs,
    heartbeatTimeout: '10 seconds',
  };
  const listing = { ...common, startToCloseTimeout: config.safety.toolTimeoutMs };
  return {
    llm,
    tool: { ...llm, startToCloseTimeout: config.safety.toolTimeoutMs },
    listTools: listing,
    listOnToolQueue: listing,
  };
}

/** The task's messages: a human's halt (from the Web UI) and follow-ups, and the queries of its state. */
function listen(run: TaskRun, calls: CancellationScope): void {
  setHandler(
    haltSignal,
    () => {
      run.halt();
      calls.cancel();
    },
    {
      description:
        'Stop this task now: cancels the call in flight and ends the task (SYSTEM_HALT sent to the agent does this for you). Payload {by?, note?}.',
    },
  );
  // A message is checked like at the agent, and bounded per run.
  setHandler(
    messageSignal,
    (raw) => {
      const refused = run.receive(raw);
      if (refused) log.warn('ignored a message signal', { reason: refused });
    },
    { description: 'A human follow-up {text, by?} (sent by its agent): appended before the next LLM call.' },
  );
  setHandler(
    approvalDecidedSignal,
    (raw) => {
      const parsed = approvalDecisionSchema().safeParse(raw);
      const refused = parsed.success ? run.decide(parsed.data) : parsed.error.message;
      if (refused) log.warn('ignored an approval decision', { reason: refused });
    },
    { description: 'Internal: a human decision on a waiting call, forwarded by the agent. Not for humans.' },
  );
  setHandler(taskProgressQuery, () => run.progress(), {
    description: 'The task’s live counts: tick, tokens (this run and in all), counters, last error code.',
  });
  setHandler(taskStatusQuery, () => run.status(), {
    description:
      'The task so far: everything its result has yet, its counters, the last error code and whether a halt arrived.',
  });
  setHandler(taskStateQuery, () => run.status(), { description: 'Deprecated: taskStatus, under its 0.1 name.' });
}

/**
 * Live state for the Web UI and the agent's `state` query: the search attributes that changed, and the
 * current details. The tick and token counts alone are written every `PROGRESS_EVERY_TICKS` ticks (each
 * write is a visibility write); a new state, error code or lock reason, and the close, at once.
 */
function report(run: TaskRun, agentState: AgentState, lockReason?: string, closedAs?: TaskOutcome): void {
  const closing = closedAs !== undefined;
  const current = workflowInfo().typedSearchAttributes;
  const changed = searchAttributes(run.reported(agentState, closing, lockReason)).filter(
    (u) => (current.get(u.key) ?? null) !== u.value,
  );
  const countsOnly = changed.every((u) => u.key === TickIndexKey || u.key === TokensUsedKey);
  if (changed.length && (closing || !countsOnly || run.progressDue())) upsertSearchAttributes(changed);
  setCurrentDetails(run.details(agentState, lockReason, closedAs));
}

/**
 * The tick's progress to the agent, every `PROGRESS_EVERY_TICKS` ticks, sent alongside the next LLM
 * call and not waited for (each report costs the agent a workflow task; a wait would cost the tick
 * one more). The agent ignores a report that arrives after its task ended; clients read the live
 * counts from the task's `progress` query.
 */
function reportProgress(run: TaskRun, root: CancellationScope): void {
  if (!run.progressDue()) return;
  root
    .run(() => sendToAgent((parent) => getExternalWorkflowHandle(parent).signal(taskProgressSignal, run.progress())))
    .catch(() => undefined);
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
