/**
 * The Budget Manager (`budget-<name>`, docs/ARCHITECTURE.md#budget-manager): one long-lived workflow per
 * shared budget. `Budget` (core/budget.ts) keeps the books and decides; this workflow takes the tasks'
 * lease requests and the admins' raises as updates, answers the `budget` query, and ends expired leases
 * on a timer set for the earliest expiry. It continues as new, its state carried, when its history grows
 * long or a new worker version is current.
 */
import {
  allHandlersFinished,
  condition,
  currentUpdateInfo,
  makeContinueAsNewFunc,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  Budget,
  budgetRaiseSchema,
  leaseRequestSchema,
  newBudgetData,
  type BudgetCreate,
  type BudgetData,
} from '../core/budget';
import { parsePayload } from '../core/payloads';
import { budgetQuery, leaseUpdate, raiseUpdate } from './budget-messages';
import { typed } from './typed';

export interface BudgetWorkflowInput {
  /** The budget as created (the first run). */
  create?: BudgetCreate;
  /** State carried by continue-as-new. */
  carried?: BudgetData;
  /** Continue-as-new once history passes this many events (tests force it small); Temporal's suggestion always counts. */
  continueAsNewAfterEvents?: number;
}

const continueOnCurrentVersion = makeContinueAsNewFunc<typeof budgetWorkflow>({
  initialVersioningBehavior: 'AUTO_UPGRADE',
});

/** A shared budget's workflow: start it with `create`; it runs until terminated. */
export async function budgetWorkflow(input: BudgetWorkflowInput): Promise<void> {
  if (!input.carried && !input.create) throw new Error('a budget workflow starts with `create` or `carried`');
  const budget = new Budget(input.carried ?? newBudgetData(input.create!, Date.now()));
  let changed = 0;

  setHandler(
    leaseUpdate,
    (raw) =>
      typed(() => {
        const answer = budget.lease(
          parsePayload(leaseRequestSchema(), raw, 'lease'),
          currentUpdateInfo()?.id,
          Date.now(),
        );
        changed++;
        return answer;
      }),
    {
      validator: (raw) => typed(() => void parsePayload(leaseRequestSchema(), raw, 'lease')),
      description:
        'Internal: a task asks for a lease, renews or grows it, or returns it: {holder, leaseId?, used, need?, release?}. Not for humans.',
    },
  );
  setHandler(
    raiseUpdate,
    (raw) =>
      typed(() => {
        const out = budget.raise(parsePayload(budgetRaiseSchema(), raw, 'admin:raise'), Date.now());
        changed++;
        return out;
      }),
    {
      validator: (raw) => typed(() => void parsePayload(budgetRaiseSchema(), raw, 'admin:raise')),
      description: "Raise the budget's limit by `tokens`: {tokens, by?, note?}. Recorded with who did it.",
    },
  );
  setHandler(budgetQuery, () => budget.status(), {
    description: "The budget's books: limit, spent, leased, available, the leases out and the audit log.",
  });

  const historyFull = () =>
    workflowInfo().continueAsNewSuggested ||
    workflowInfo().historyLength >= (input.continueAsNewAfterEvents ?? Infinity) ||
    workflowInfo().targetWorkerDeploymentVersionChanged;
  for (;;) {
    const seen = changed;
    const next = budget.nextExpiry();
    const woke = () => changed !== seen || historyFull();
    if (next === undefined) await condition(woke);
    else if (next > Date.now()) await condition(woke, next - Date.now());
    budget.expire(Date.now());
    if (historyFull()) {
      await condition(allHandlersFinished);
      const { create: _created, ...rest } = input;
      await continueOnCurrentVersion({ ...rest, carried: budget.data });
    }
  }
}
