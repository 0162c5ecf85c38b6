/**
 * The task's side of the Budget Manager (docs/ARCHITECTURE.md#budget-manager): a workflow cannot send an
 * update to another workflow, so a (local) activity sends the task's lease request to its budget's
 * workflow with the worker's client, under the task's update id, so a retried attempt is answered once.
 */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { budgetWorkflowId, type LeaseAnswer, type LeaseRequest } from '../core/budget';
import { leaseUpdate } from '../workflows/budget-messages';

/** Input of the `budgetLease` activity. */
export interface BudgetLeaseInput {
  /** The budget's full name (`<tenant>:<name>` for a tenant's). */
  budget: string;
  updateId: string;
  request: LeaseRequest;
}

/** A lease's answer, or why there is none (the budget does not exist, or refused the request as malformed). */
export type BudgetLeaseResult = { answer: LeaseAnswer } | { missing: string };

export function createBudgetActivities() {
  return {
    /** Ask the budget's workflow for a lease, a renewal or a return. */
    async budgetLease(input: BudgetLeaseInput): Promise<BudgetLeaseResult> {
      const handle = Context.current().client.workflow.getHandle(budgetWorkflowId(input.budget));
      try {
        const answer = await handle.executeUpdate(leaseUpdate, { args: [input.request], updateId: input.updateId });
        return { answer };
      } catch (err) {
        const missing = missingBudget(err, input.budget);
        if (missing) return { missing };
        if (err instanceof WorkflowUpdateFailedError)
          return { missing: `budget ${input.budget}: ${String(err.cause)}` };
        throw err;
      }
    },
  };
}

/** Why `budget` cannot be drawn from (it does not exist, or its workflow ended), or undefined when it can. */
export async function budgetMissing(client: Client, budget: string): Promise<string | undefined> {
  try {
    const d = await client.workflow.getHandle(budgetWorkflowId(budget)).describe();
    return d.status.name === 'RUNNING' ? undefined : noSuchBudget(budget, `its workflow is ${d.status.name}`);
  } catch (err) {
    const missing = missingBudget(err, budget);
    if (missing) return missing;
    throw err;
  }
}

function missingBudget(err: unknown, budget: string): string | undefined {
  const notFound =
    err instanceof WorkflowNotFoundError ||
    (err as { name?: string }).name === 'WorkflowNotFoundError' ||
    (err as { code?: unknown }).code === 5;
  return notFound ? noSuchBudget(budget, `no workflow ${budgetWorkflowId(budget)}`) : undefined;
}

function noSuchBudget(budget: string, why: string): string {
  const name = budget.slice(budget.indexOf(':') + 1);
  return (
    `the config's budget "${name}" does not exist (${why}): ` +
    `create it with \`starry budget create ${name} --tokens N\`, or name an existing one (\`starry budget list\`)`
  );
}
