/**
 * Human approval (docs/ARCHITECTURE.md#human-approval): the turn's calls that a rule sends to a human
 * wait, all together, before any of them runs. The wait is durable: nothing runs and no worker holds
 * anything meanwhile (a timer and the decisions the agent forwards are all there is). The agent lists
 * the calls (and alerts) when told; a call whose time runs out counts as denied. `TaskRun` keeps the
 * book (which call waits, what was decided).
 */
import { CancellationScope, condition, getExternalWorkflowHandle } from '@temporalio/workflow';
import type { TaskRun } from '../../core/task-run';
import { approvalsSignal } from '../messages';
import type { TaskHook } from './hooks';
import { report, sendToAgent } from './progress';
import type { TaskScope } from './scope';

export const approvals = (): TaskHook => ({
  name: 'approvals',
  async beforeToolCalls(t, calls) {
    if (!t.run.askApprovals(calls, Date.now()).length) return;
    t.flush();
    try {
      await awaitApprovals(t);
    } catch (err) {
      // A halt ends the wait: the turn's calls are recorded as never run, and the task ends CANCELED.
      if (!t.haltedBy(err)) throw err;
    }
  },
});

/** Wait for the decisions (or their time to run out); the agent hears of the calls that wait and that expired. */
async function awaitApprovals(t: TaskScope): Promise<void> {
  const { run } = t;
  report(run, 'WAITING_FOR_APPROVAL');
  tellAgent(run);
  let expired = false;
  while (run.waitingApprovals().length && !t.halted()) {
    const left = run.approvalTimeLeft(Date.now());
    if (left > 0) await condition(() => !run.waitingApprovals().length || t.halted(), left);
    const before = run.waitingApprovals().length;
    run.expireApprovals(Date.now());
    expired ||= run.waitingApprovals().length < before;
  }
  if (t.halted()) return;
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
