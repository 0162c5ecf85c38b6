/**
 * A shared budget (config `budget`, docs/ARCHITECTURE.md#budget-manager): the task draws from it in
 * leases (`LeaseHolder`, core/budget.ts, decides). Before an LLM call the lease must cover what the call
 * may send and its output cap, else the budget is asked (a local activity: one marker event, no extra
 * workflow task) and the output is capped to what the lease holds; a refusal stops the task (STOPPED,
 * SHARED_BUDGET_EXHAUSTED). Every call's tokens are charged to it; at the task's end its unused part
 * goes back; continuing as new, it is carried.
 */
import { CancellationScope, log, workflowInfo } from '@temporalio/workflow';
import { budgetRefFor, LeaseHolder, sharedBudgetLock } from '../../core/budget';
import type { LlmCallInput } from '../../core/llm';
import type { TaskEnd } from '../../core/task-run';
import { factsOf } from '../activity-facts';
import type { TaskHook } from './hooks';
import type { TaskScope } from './scope';

/** The lease hook of a task whose config names a shared budget; none otherwise. */
export function budgetLease(t: TaskScope): TaskHook | undefined {
  const { config, input } = t;
  if (!config.budget) return undefined;
  const lease = new LeaseHolder(
    input.lease ?? LeaseHolder.fresh(budgetRefFor(input.agentId, config.budget)),
    workflowInfo().workflowId,
  );
  return {
    name: 'budget-lease',
    async beforeLlmCall(t, request) {
      try {
        return await cover(t, lease, request);
      } catch (err) {
        if (t.haltedBy(err)) return t.run.cancelled();
        return t.run.llmFailed(factsOf(err, `budget ${lease.data.budget}`).error);
      }
    },
    spent: (_t, usage) => lease.charge(usage.inputTokens + usage.outputTokens),
    ended: (t) => giveBack(t, lease),
    carried: () => ({ lease: lease.data }),
  };
}

/** The lease must cover the call: asked of the budget when it does not; a refusal locks the task. */
async function cover(t: TaskScope, held: LeaseHolder, request: LlmCallInput): Promise<TaskEnd | undefined> {
  const sends = t.run.inputEstimate();
  let step = held.before(sends, request.maxOutputTokens, Date.now());
  if ('ask' in step) {
    const ask = { budget: held.data.budget, updateId: held.nextUpdateId(workflowInfo().runId), request: step.ask };
    const got = await t.call(`budget ${held.data.budget}`, () => t.local.budgetLease(ask));
    step =
      'missing' in got
        ? { lock: sharedBudgetLock(got.missing) }
        : held.answered(got.answer, sends, request.maxOutputTokens);
  }
  if ('lock' in step) return t.run.lockedBy(step.lock);
  if ('maxOutputTokens' in step) request.maxOutputTokens = step.maxOutputTokens;
  return undefined;
}

/** At the task's end (any outcome but a continue-as-new): the lease's unused part goes back to the budget. */
async function giveBack(t: TaskScope, lease: LeaseHolder): Promise<void> {
  const request = lease.release();
  if (!request) return;
  const ask = { budget: lease.data.budget, updateId: lease.nextUpdateId(workflowInfo().runId), request };
  await CancellationScope.nonCancellable(async () => {
    try {
      await t.local.budgetLease(ask);
      lease.returned();
    } catch (err) {
      log.warn('could not return the lease to its budget: it returns when it expires', {
        budget: ask.budget,
        error: String(err),
      });
    }
  });
}
