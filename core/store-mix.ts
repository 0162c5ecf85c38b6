/**
 * Workers that share a task queue but not a transcript store (issue 53). Temporal hands any task of a
 * queue to any of its workers, and transcripts live in the worker's store (activities/store/): a worker
 * whose store is another cannot read what the others wrote, and the task fails with E_BLOB_MISSING.
 * Each worker names its store in its Temporal identity (what `describeTaskQueue` lists for each poller
 * and each history records for each activity), so the mix is found and named from the pollers alone.
 */

/** What separates a worker's own identity from the store it names. */
const STORE_MARK = ' store=';

/**
 * A worker identity that names its store: `<base> store=<where>`.
 *
 * ```ts
 * identityWithStore('42@host', 'directory /x/blobs') // '42@host store=directory /x/blobs'
 * ```
 */
export function identityWithStore(base: string, where: string): string {
  return `${storeless(base)}${STORE_MARK}${where}`;
}

/** The store a worker identity names, if it names one (workers older than issue 53 do not). */
export function storeOfIdentity(identity: string): string | undefined {
  const at = identity.indexOf(STORE_MARK);
  return at < 0 ? undefined : identity.slice(at + STORE_MARK.length) || undefined;
}

/** The identity without its store: the worker's own, `pid@host` by default. */
export function storeless(identity: string): string {
  const at = identity.indexOf(STORE_MARK);
  return at < 0 ? identity : identity.slice(0, at);
}

/** A worker polling a task queue, as `describeTaskQueue` lists it. */
export interface QueuePoller {
  identity: string;
}

/** A worker on the queue whose store is another. */
export interface ForeignStore {
  /** The worker, without its store: e.g. `4711@build-host`. */
  worker: string;
  /** Its store, e.g. `directory /other/checkout/.temporal/blobs`. */
  store: string;
}

/**
 * The workers on the queue whose store is not `ours`, one per worker (pollers of several kinds repeat).
 *
 * ```ts
 * foreignStores('directory /a', [{ identity: '1@h store=directory /b' }]) // [{ worker: '1@h', store: 'directory /b' }]
 * ```
 */
export function foreignStores(ours: string, pollers: readonly QueuePoller[]): ForeignStore[] {
  const seen = new Map<string, ForeignStore>();
  for (const { identity } of pollers) {
    const store = storeOfIdentity(identity);
    if (store === undefined || store === ours) continue;
    seen.set(identity, { worker: storeless(identity), store });
  }
  return [...seen.values()];
}

/** What to do about a mix: the same for every message that names one. */
export function storeMixAdvice(taskQueue: string): string {
  return (
    `One task queue needs one store: give every worker on ${taskQueue} the same STARRY_STORE_DIR (a shared disk) or ` +
    'STARRY_STORE_BUCKET, or run this one on a task queue of its own (STARRY_TASK_QUEUE; `starry dev` on a server of its own). ' +
    'Neither the model nor the credentials are at fault'
  );
}

/** Who the others are, for a message: `4711@host (directory /b), …`. */
function named(others: readonly ForeignStore[]): string {
  const shown = others.slice(0, 3).map((o) => `${o.worker} (${o.store})`);
  return others.length > 3 ? `${shown.join(', ')} and ${others.length - 3} more` : shown.join(', ');
}

/**
 * The message of a blob this worker cannot read while others on its queue use another store: which
 * blob, this worker's store, theirs, and what to do.
 *
 * ```ts
 * storeMixMessage({ hash, ours: 'directory /a', taskQueue: 'agents', others }) // 'transcript blob sha256:… is missing …'
 * ```
 */
export function storeMixMessage(facts: {
  hash: string;
  ours: string;
  taskQueue: string;
  others: readonly ForeignStore[];
}): string {
  return (
    `transcript blob sha256:${facts.hash} is missing from this worker's store (${facts.ours}): ` +
    `it was most likely written by another worker on task queue ${facts.taskQueue} whose store is another: ` +
    `${named(facts.others)}. ${storeMixAdvice(facts.taskQueue)}`
  );
}

/**
 * What a worker about to poll says when the queue's workers use another store: the task it shares with
 * them will fail at the first blob one of them cannot read.
 */
export function storeMixWarning(facts: { ours: string; taskQueue: string; others: readonly ForeignStore[] }): string {
  return (
    `workers already on task queue ${facts.taskQueue} use another transcript store than this one (${facts.ours}): ` +
    `${named(facts.others)}; a task that moves between them fails with E_BLOB_MISSING. ${storeMixAdvice(facts.taskQueue)}`
  );
}

/**
 * What a human fixes before unlocking an agent an error paused, by its lock reason's message
 * (`E_BLOB_MISSING: …` for a transcript blob): the store, never the credentials, for a missing blob.
 *
 * ```ts
 * pausedCause('E_BLOB_MISSING: transcript blob …') // 'the transcript store named above (one store per task queue)'
 * ```
 */
export function pausedCause(message: string | undefined): string {
  return message?.startsWith('E_BLOB_MISSING')
    ? 'the transcript store named above (one store per task queue)'
    : 'the cause named above (credentials, config, the worker)';
}
