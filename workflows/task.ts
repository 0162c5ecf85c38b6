/**
 * The task workflow: one agent task's tick loop (docs/ARCHITECTURE.md#workflows), as the seeds tell it —
 * context, LLM, tools, pain, breakers, verify. It orchestrates only: `TaskRun` (core/task-run.ts) keeps
 * the books and decides each step, activities act, and every other concern (the shared budget, human
 * approvals, the summary call, telemetry, the tool queue, lost workers, progress) is a hook the loop
 * calls at fixed points (workflows/task/). Pinned to the Worker Deployment Version it started on
 * (workflows/index.ts): it never meets other code.
 */
import {
  CancellationScope,
  CancelledFailure,
  ContinueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
} from '@temporalio/workflow';
import type { ToolExecutionResult } from '../core/errors';
import type { LlmCallInput, LlmResponse, LlmToolCall } from '../core/llm';
import { llmLabel } from '../core/llm-spec';
import { callIdOf, type TaskEnd, type TaskRunInput, type TaskRunOutput } from '../core/task-run';
import { factsOf } from './activity-facts';
import { taskEndedSignal } from './messages';
import { listen, TaskScope, taskHooks, type ToolOutcome } from './task/index';
import { reportProgress, sendToAgent } from './task/progress';
import { setUp } from './task/setup';

export type { TaskRunInput, TaskRunOutput } from '../core/task-run';

/** Run one task: ticks of context → LLM → tools until a final answer, a breaker, a halt or a failure. */
export async function taskWorkflow(input: TaskRunInput): Promise<TaskRunOutput> {
  const t = new TaskScope(input, taskHooks);
  listen(t);
  let out: TaskRunOutput;
  try {
    out = await t.calls.run(async () => {
      const failed = await setUp(t);
      return failed ? t.finish(failed) : t.hooks.task(t, async () => t.finish(await ticks(t)));
    });
  } catch (err) {
    // A cancellation that arrived at an await outside a call; a FAILED task still gives back what it holds.
    if (!(t.cancelled && isCancellation(err))) {
      if (!(err instanceof ContinueAsNew)) await t.hooks.ended(t);
      throw err;
    }
    out = t.finish(t.run.cancelled());
  }
  await t.hooks.ended(t);
  if (t.cancelled && out.result.outcome === 'CANCELLED') {
    // A cancelled workflow carries no result: the agent gets the output by signal first (it may be gone).
    await CancellationScope.nonCancellable(() =>
      sendToAgent((parent) => getExternalWorkflowHandle(parent).signal(taskEndedSignal, out)),
    );
    throw new CancelledFailure('SYSTEM_HALT: the task was halted');
  }
  return out;
}

/** The seeds' loop, a tick at a time, until a step ends the task. */
async function ticks(t: TaskScope): Promise<TaskEnd> {
  for (;;) {
    await t.hooks.beforeTick(t); // a long task moves to a fresh history here
    const started = t.run.startTick(t.historySize()) ?? (await t.hooks.tickStarted(t)); // halt, loop cap, summary
    if (started) return started;
    const call = t.run.llmCall(); // the context, and the budget's rung
    if ('end' in call) return call.end;
    const covered = await t.hooks.beforeLlmCall(t, call.request); // a shared budget's lease
    if (covered) return covered;
    const answer = await think(t, call.request);
    if ('end' in answer) return answer.end;
    const next = t.run.llmAnswered(answer.response); // a final answer, verified once, or the turn's calls
    if ('end' in next) return next.end;
    if ('verify' in next) {
      reportProgress(t.run, t.root);
      continue;
    }
    await t.hooks.beforeToolCalls(t, next.calls); // calls that wait for a human
    const failed = await act(t, next.calls);
    if (failed) return failed;
    const end = t.run.endTurn(); // the turn's alerts, then a breaker's lock or a halt
    t.flush();
    if (end) return end;
    t.hooks.tickEnded(t);
  }
}

/** The LLM call: the model's answer, or the end of a task whose controller failed (it feels no pain about itself). */
async function think(t: TaskScope, request: LlmCallInput): Promise<{ end: TaskEnd } | { response: LlmResponse }> {
  const { llm } = t.config;
  try {
    const response = await t.hooks.llmCall(t, request, () =>
      t.call(`llm · tick ${request.tick}`, () =>
        t.activities.llm.executeWithOptions(
          { ...t.options.llm, summary: `llm ${llmLabel(llm)} · tick ${request.tick}` },
          [request],
        ),
      ),
    );
    t.hooks.spent(t, response.usage);
    return { response };
  } catch (err) {
    if (t.haltedBy(err)) return { end: t.run.cancelled() };
    // A retryable LLM error that ran out of attempts is still the provider's error.
    return { end: t.run.llmFailed(factsOf(err, `llm ${llm.provider}`).error) };
  }
}

/** The turn's tool calls, in order: each checked, run, and its outcome (pain, breakers) recorded. */
async function act(t: TaskScope, calls: LlmToolCall[]): Promise<TaskEnd | undefined> {
  for (const [index, call] of calls.entries()) {
    const step = t.run.beforeTool(call, index);
    if (!step.run) {
      t.flush();
      continue;
    }
    const { tick } = step.pending.record;
    const info = { call, index, callId: callIdOf(tick, index), tick };
    const { end } = await t.hooks.toolCall(t, info, async (): Promise<ToolOutcome> => {
      let result: ToolExecutionResult;
      try {
        result = await t.call(step.summary, () =>
          t.activities.tool.executeWithOptions({ ...t.hooks.toolOptions(t, t.options.tool), summary: step.summary }, [
            {
              name: call.name,
              args: step.args,
              tick,
              callId: info.callId,
              workspace: t.config.workspace,
              tools: t.config.tools,
              toolTimeoutMs: t.config.safety.toolTimeoutMs,
              maxRetryDelayMs: t.config.retry.maximumIntervalMs,
              keep: { llmCallId: call.id, maxChars: t.run.resultChars(calls.length) },
            },
          ]),
        );
      } catch (err) {
        if (t.haltedBy(err)) {
          // The turn's remaining calls are recorded as skipped (none starts); the task ends after the loop.
          t.run.toolCancelled(step.pending);
          return { failure: err };
        }
        const end = t.run.toolFailed(step.pending, t.toolFacts(err, call.name));
        return { failure: err, ...(end ? { end } : {}) };
      }
      t.run.afterTool(step.pending, result);
      return {};
    });
    if (end) return end;
  }
  return undefined;
}
