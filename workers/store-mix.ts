/**
 * Each worker names its transcript store in its Temporal identity, and says at start when the workers
 * already on its task queue use another store (issue 53; core/store-mix.ts decides). A warning, not a
 * refusal, and of live workers only: a stopped worker stays in the queue's poller list for minutes, and
 * a restart that moves the only worker to a new store must not be warned of or refused for it.
 */
import { hostname } from 'node:os';
import type { NativeConnection } from '@temporalio/worker';
import { isLivePoller } from '../client/connection';
import { foreignStores, identityWithStore, storeMixWarning, type QueuePoller } from '../core/store-mix';

/**
 * The worker's identity: the given one (else the SDK's default, `pid@host`) with its store.
 *
 * ```ts
 * storeIdentity(undefined, 'directory /x/blobs') // '4711@host store=directory /x/blobs'
 * ```
 */
export function storeIdentity(given: string | undefined, where: string): string {
  return identityWithStore(given ?? `${process.pid}@${hostname()}`, where);
}

/**
 * The warning for a worker about to poll `taskQueue` with the store `where`, when workers already there
 * name another; undefined when none does (or Temporal cannot say: the check never stops a start).
 */
export async function storeMixAtStart(
  connection: NativeConnection,
  facts: { namespace: string; taskQueue: string; where: string },
): Promise<string | undefined> {
  try {
    const pollers: QueuePoller[] = [];
    for (const taskQueueType of [1, 2]) {
      const answer = await connection.workflowService.describeTaskQueue({
        namespace: facts.namespace,
        taskQueue: { name: facts.taskQueue, kind: 1 },
        taskQueueType,
      });
      for (const p of answer.pollers ?? []) if (p.identity && isLivePoller(p)) pollers.push({ identity: p.identity });
    }
    const others = foreignStores(facts.where, pollers);
    return others.length ? storeMixWarning({ ours: facts.where, taskQueue: facts.taskQueue, others }) : undefined;
  } catch {
    return undefined;
  }
}
