/**
 * The budget workflow's messages (workflows/budget.ts), shared with the clients and the lease activity:
 * `lease` (a task's lease request), `admin:raise`, and the `budget` query.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { BudgetRaise, BudgetStatus, LeaseAnswer, LeaseRequest } from '../core/budget';

/** A task's lease request: grow or renew its lease, or return it. Idempotent by update id. */
export const leaseUpdate = defineUpdate<LeaseAnswer, [LeaseRequest]>('lease');
/** An admin raises the budget's limit: `{tokens, by?, note?}`. */
export const raiseUpdate = defineUpdate<BudgetStatus, [BudgetRaise]>('admin:raise');
/** The budget's books: limit, spent, leases, audit log. */
export const budgetQuery = defineQuery<BudgetStatus>('budget');

/** The budget workflow's type, by name. */
export const BUDGET_WORKFLOW_TYPE = 'budgetWorkflow';
