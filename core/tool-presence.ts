/**
 * Whether a tool call that no tool worker picked up should fail now or keep waiting
 * (docs/ARCHITECTURE.md#tool-workers). Temporal cannot tell "no tool worker at all" from "every tool
 * worker busy" by the call alone: a busy worker stops polling, and the server lists a gone worker's
 * pollers for minutes. So every tool worker process also serves a presence queue of its own, whose one
 * activity is never busy: a call unpicked after a short wait asks it, and only a fleet that answers
 * keeps the call waiting.
 */

/** The task queue where every tool worker process of `toolQueue` answers the presence probe. */
export function presenceQueueOf(toolQueue: string): string {
  return `${toolQueue}-presence`;
}

/** A tool call's first wait for a tool worker: short, since a fleet that polls takes a call at once. */
export const TOOL_CALL_FIRST_WAIT_MS = 5_000;

/** How long the presence probe waits: a live tool worker process answers it in milliseconds. */
export const TOOL_PRESENCE_PROBE_MS = 5_000;

/** Each later wait of a call that a present but busy fleet has not picked up yet. */
export const TOOL_CALL_BUSY_WAIT_MS = 60_000;

/** Waits of `TOOL_CALL_BUSY_WAIT_MS` a busy fleet gets before the task fails, saying it is busy. */
export const TOOL_CALL_BUSY_ROUNDS = 5;

/** What to do with a call no tool worker picked up in its wait number `round` (0 first). */
export type UnpickedCall = { wait: number } | { fail: 'absent' | 'busy' };

/**
 * The next step for a call unpicked after wait `round`, given whether the presence probe was answered.
 *
 * ```ts
 * afterUnpicked(0, false) // { fail: 'absent' }: no tool worker process at all
 * afterUnpicked(0, true)  // { wait: 60_000 }: the fleet is there, busy
 * ```
 */
export function afterUnpicked(round: number, present: boolean): UnpickedCall {
  if (!present) return { fail: 'absent' };
  if (round >= TOOL_CALL_BUSY_ROUNDS) return { fail: 'busy' };
  return { wait: TOOL_CALL_BUSY_WAIT_MS };
}
