/**
 * Shared budgets from a client (docs/LIBRARY.md#shared-budgets): create, raise, show and list the
 * budgets agents draw from (`budget` in their config). Each budget is a workflow, `budget-<name>`
 * (`budget-<tenant>:<name>` for a tenant's); a client for a tenant (`AgentClient.forTenant`) sees and
 * changes only that tenant's budgets.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  budgetCreateSchema,
  budgetRaiseSchema,
  budgetWorkflowId,
  checkBudgetName,
  noBudget,
  type BudgetCreate,
  type BudgetRaise,
  type BudgetStatus,
} from '../core/budget';
import { RefusedError } from '../core/errors';
import { parsePayload } from '../core/payloads';
import { qualifiedAgentId } from '../core/tenant';
import type { budgetWorkflow } from '../workflows';
import { BUDGET_WORKFLOW_TYPE, budgetQuery, raiseUpdate } from '../workflows/budget-messages';
import { updateFailure } from './failures';

export type { BudgetCreate, BudgetRaise, BudgetStatus } from '../core/budget';

/**
 * The budgets of one tenant (or of none): `agents.budgets()` gives one.
 *
 * ```ts
 * const budgets = agents.budgets();
 * await budgets.create({ name: 'team-a', tokens: 1_000_000, by: 'alice' });
 * await budgets.raise('team-a', { tokens: 500_000, by: 'alice', note: 'quarter end' });
 * console.log((await budgets.show('team-a')).available);
 * ```
 */
export class BudgetClient {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    /** The tenant whose budgets these are; undefined: budgets of no tenant. */
    readonly tenant: string | undefined,
  ) {}

  /**
   * Create a budget of `tokens` (recorded with `by`). A worker on the client's task queue runs it.
   * @throws InvalidArgumentError (a bad name or number), RefusedError (it exists: raise it instead).
   */
  async create(input: BudgetCreate): Promise<BudgetStatus> {
    const create = parsePayload(budgetCreateSchema(), input, 'budget');
    try {
      await this.client.workflow.start<typeof budgetWorkflow>(BUDGET_WORKFLOW_TYPE, {
        workflowId: this.workflowId(create.name),
        taskQueue: this.taskQueue,
        args: [{ create }],
        workflowIdConflictPolicy: 'FAIL',
        staticSummary: `budget ${create.name}: ${create.tokens} tokens`,
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError)
        throw new RefusedError(
          `budget "${create.name}" exists already: \`starry budget raise ${create.name} --tokens N\` adds to it`,
          { cause: err },
        );
      throw err;
    }
    return this.show(create.name);
  }

  /**
   * Raise a budget's limit by `tokens`, recorded with `by`: agents it stopped take tasks again once unlocked.
   * @throws NotFoundError (no such budget), InvalidArgumentError.
   */
  async raise(name: string, input: BudgetRaise): Promise<BudgetStatus> {
    const payload = parsePayload(budgetRaiseSchema(), input, 'raise');
    try {
      return await this.client.workflow
        .getHandle(this.workflowId(name))
        .executeUpdate(raiseUpdate, { args: [payload] });
    } catch (err) {
      throw this.missing(err, name) ?? updateFailure(err, 'raise refused');
    }
  }

  /** A budget's books: limit, spent, leased, available, its leases and its audit log. @throws NotFoundError. */
  async show(name: string): Promise<BudgetStatus> {
    try {
      return await this.client.workflow.getHandle(this.workflowId(name)).query(budgetQuery);
    } catch (err) {
      throw this.missing(err, name) ?? err;
    }
  }

  /** Every running budget of this tenant (from the visibility store, which may lag a second), by name. */
  async list(): Promise<BudgetStatus[]> {
    const prefix = budgetWorkflowId(qualifiedAgentId(this.tenant, ''));
    const ids: string[] = [];
    for await (const e of this.client.workflow.list({
      query: `WorkflowType = '${BUDGET_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'`,
    })) {
      const own = this.tenant === undefined ? !e.workflowId.slice('budget-'.length).includes(':') : true;
      if (own && e.workflowId.startsWith(prefix)) ids.push(e.workflowId);
      if (ids.length >= 1000) break;
    }
    const all = await Promise.all(
      ids.map((id) =>
        this.client.workflow
          .getHandle(id)
          .query(budgetQuery)
          .catch(() => undefined),
      ),
    );
    return all.filter((s): s is BudgetStatus => s !== undefined).sort((a, b) => a.name.localeCompare(b.name));
  }

  private workflowId(name: string): string {
    return budgetWorkflowId(qualifiedAgentId(this.tenant, checkBudgetName(name)));
  }

  private missing(err: unknown, name: string): Error | undefined {
    const notFound =
      err instanceof WorkflowNotFoundError ||
      (err as { name?: string }).name === 'WorkflowNotFoundError' ||
      (err as { code?: unknown }).code === 5;
    return notFound ? noBudget(name) : undefined;
  }
}
