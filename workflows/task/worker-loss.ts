/**
 * A worker's death is neither a repeated side effect nor pain (docs/ARCHITECTURE.md, "Trust boundary"):
 * a call whose worker stopped heartbeating mid-call runs again, not counted as a failure nor as a spent
 * retry, up to `LIMITS.workerLossReruns` times (side-effecting tools apply a call once, by its id).
 */
import { log } from '@temporalio/workflow';
import { LIMITS } from '../../core/payloads';
import { isWorkerLoss } from '../activity-facts';
import type { TaskHook } from './hooks';

export const workerLoss = (): TaskHook => ({
  name: 'worker-loss',
  // Not an async function: a `catch` is one promise a call, an async function's await two.
  activity<T>(t: Parameters<NonNullable<TaskHook['activity']>>[0], what: string, call: () => Promise<T>) {
    const attempt = (lost: number): Promise<T> =>
      call().catch((err: unknown) => {
        if (t.halted() || !isWorkerLoss(err) || lost >= LIMITS.workerLossReruns) throw err;
        log.warn(
          'the worker running this call was lost (heartbeats stopped): running the call again, not counted as a failure',
          { call: what, lost: lost + 1 },
        );
        return attempt(lost + 1);
      });
    return attempt(0);
  },
});
