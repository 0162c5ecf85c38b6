/**
 * How many of a run's history batches to ask Temporal for at once, so that no answer exceeds gRPC's
 * 4 MiB message limit, whatever the history holds (docs/ARCHITECTURE.md#reading-histories). Temporal
 * pages a history by *batches* (the events one request wrote: a workflow task's commands, an activity's
 * completion), not by events, and a batch may hold one payload of up to 2 MB. A run's size in bytes is
 * known from its description (`historySizeBytes`), so the reader asks for the whole rest of a run at
 * once when that rest fits, and one batch at a time while it does not. Pure.
 */

const MiB = 1024 * 1024;

/** gRPC's default limit on a message a client receives; Temporal's answers must stay under it. */
export const GRPC_MESSAGE_LIMIT = 4 * MiB;
/** The most one page may hold: under the limit, with room for the answer's own framing. */
export const PAGE_BYTES = 3.5 * MiB;
/** The largest batch a running workflow may append while it is read: one event with a 2 MB payload. */
export const LARGEST_BATCH_BYTES = 2 * MiB + 64 * 1024;
/** A page size that means "all the rest" (the server answers at most its own maximum). */
export const ALL_BATCHES = 1000;

/** What a description of the run said: its bytes and events then, and whether it had closed. */
export interface RunExtent {
  bytes: number;
  events: number;
  closed: boolean;
}

/** How much of the run was read: the bytes of its events so far and the last event's id. */
export interface RunRead {
  bytes: number;
  events: number;
}

/** The page to ask for next: `batches` (Temporal's `maximumPageSize`), or a fresh description first. */
export type PagePlan = { batches: number } | { describe: true };

/**
 * The next page of a run: everything left when it fits in a page, one batch otherwise. The rest of a
 * running run may have grown since it was described, so before asking for more than one batch of it the
 * reader describes it again (`describe`), and then asks for the events it knows of, leaving room for one
 * batch written meanwhile. Past what the description knew (a running run's live tail), a batch at a time.
 *
 * ```ts
 * planPage({ bytes: 3 * MiB, events: 900, closed: true }, { bytes: 0, events: 0 })           // { batches: ALL_BATCHES }
 * planPage({ bytes: 30 * MiB, events: 900, closed: true }, { bytes: 1 * MiB, events: 40 })  // { batches: 1 }
 * ```
 */
export function planPage(extent: RunExtent | undefined, read: RunRead, fresh = false): PagePlan {
  // Unknown size (an older server, a run not described): the smallest page is always safe.
  if (!extent || !(extent.bytes > 0) || read.events >= extent.events) return { batches: 1 };
  const rest = extent.bytes - read.bytes;
  if (extent.closed) return rest <= PAGE_BYTES ? { batches: ALL_BATCHES } : { batches: 1 };
  if (rest > PAGE_BYTES - LARGEST_BATCH_BYTES) return { batches: 1 };
  if (!fresh) return { describe: true };
  // A batch holds one event or more, so this many batches cover the events described and few after.
  return { batches: Math.max(1, extent.events - read.events) };
}
