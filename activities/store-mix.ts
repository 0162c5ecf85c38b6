/**
 * A missing blob, explained (issue 53): before a task fails with E_BLOB_MISSING, the activity asks
 * Temporal which workers poll its task queue. Each names its store in its identity (workers/worker.ts),
 * so one whose store is not this worker's is the likely writer, and the message names both stores and
 * what to do (core/store-mix.ts). Outside an activity, or when Temporal cannot answer, the store's own
 * message stands.
 */
import { Context } from '@temporalio/activity';
import { foreignStores, storeMixMessage, type QueuePoller } from '../core/store-mix';
import type { BlobMissingError } from './store';

/** Task queue kinds in `describeTaskQueue`: 1 workflow, 2 activity. */
const QUEUE_TYPES = [1, 2] as const;

/**
 * The message for a blob this worker's store does not have: the store mix when another worker on the
 * queue names another store, else the store's own message.
 *
 * ```ts
 * const message = await missingBlobMessage(err); // 'transcript blob sha256:… is missing from this worker's store …'
 * ```
 */
export async function missingBlobMessage(err: BlobMissingError): Promise<string> {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return err.message;
  }
  const { taskQueue, workflowNamespace: namespace } = ctx.info;
  try {
    const pollers: QueuePoller[] = [];
    for (const taskQueueType of QUEUE_TYPES) {
      const answer = await ctx.client.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue, kind: 1 },
        taskQueueType,
      });
      for (const p of answer.pollers ?? []) if (p.identity) pollers.push({ identity: p.identity });
    }
    const others = foreignStores(err.where, pollers);
    return others.length ? storeMixMessage({ hash: err.hash, ours: err.where, taskQueue, others }) : err.message;
  } catch {
    // The lookup is a courtesy: the blob is missing either way.
    return err.message;
  }
}
