/**
 * The agent's state and lock (docs/ARCHITECTURE.md#workflows): `WAITING_FOR_EVENT ⇄ EXECUTING ⇄
 * WAITING_FOR_APPROVAL`, `EXECUTING → SAFETY_LOCKOUT | ERROR_PAUSED | STOPPED`, `any → STOPPED` (halt; a
 * locked agent keeps its state and reason, the halt recorded beside them), `locked → WAITING_FOR_EVENT`
 * (unlock, recorded with who did it). Plain data in the agent's `AgentData`; the functions change the part
 * they are given.
 */
import type { UnlockRecord, UnlockResult } from '../contract';
import { RefusedError } from '../errors';
import type { UnlockInput } from '../payloads';
import type { LockVerdict } from '../safety-rungs';
import { isLocked, reasonText, type AgentState, type LockReason } from '../types';
import { keepRecent } from './results';

/** Who halted an agent that was locked already, and why. */
export interface HaltRecord {
  by: string;
  note?: string;
}

/** The agent's state, why it is locked, and the unlocks that ended its locks. */
export interface LockData {
  agentState: AgentState;
  reason?: LockReason;
  /** A SYSTEM_HALT that reached the agent while it was locked already: `reason` stays the first lock's. */
  halt?: HaltRecord;
  /** The newest unlocks (`KEEP_RECENT`). */
  unlocks: UnlockRecord[];
}

/**
 * Refuse a task while the agent is locked, naming its state, its reason and the way out.
 *
 * @throws RefusedError while locked.
 */
export function refuseWhileLocked(d: LockData, agentId: string): void {
  if (!isLocked(d.agentState)) return;
  const why = d.reason ? ` (${reasonText(d.reason)})` : '';
  throw new RefusedError(
    `agent ${agentId} is ${d.agentState}${why} and refuses tasks until a human unlocks it: starry unlock ${agentId}`,
  );
}

/** A task starts: EXECUTING, no reason. */
export function enterExecuting(d: LockData): void {
  d.agentState = 'EXECUTING';
  d.reason = undefined;
}

/** EXECUTING ⇄ WAITING_FOR_APPROVAL, as calls start and stop waiting. */
export function settleWaiting(d: LockData, waiting: boolean): void {
  if (waiting && d.agentState === 'EXECUTING') d.agentState = 'WAITING_FOR_APPROVAL';
  else if (!waiting && d.agentState === 'WAITING_FOR_APPROVAL') d.agentState = 'EXECUTING';
}

/** A run ended: the lock it asks for (a halt that came first keeps STOPPED), else WAITING_FOR_EVENT. */
export function lockAfterRun(d: LockData, lock: LockVerdict | undefined): void {
  settleWaiting(d, false);
  if (lock && d.agentState !== 'STOPPED') {
    d.agentState = lock.agentState;
    d.reason = lock.reason;
  } else if (d.agentState === 'EXECUTING') {
    d.agentState = 'WAITING_FOR_EVENT';
  }
}

/**
 * SYSTEM_HALT: STOPPED with its reason; an agent locked already keeps its state and first reason (what a
 * human must read before unlocking), the halt recorded beside them.
 */
export function haltLock(d: LockData, by: string, note?: string): void {
  if (isLocked(d.agentState)) {
    d.halt = { by, ...(note ? { note } : {}) };
  } else {
    d.agentState = 'STOPPED';
    d.reason = { code: 'SYSTEM_HALT', message: `SYSTEM_HALT by ${by}${note ? `: ${note}` : ''}` };
  }
}

/** What `admin:unlock` answers for an agent that is not locked: nothing to do, said plainly. */
export function notLocked(d: LockData, agentId: string): UnlockResult {
  return {
    unlocked: false,
    agentState: d.agentState,
    message: `agent ${agentId} is not locked (${d.agentState}): nothing to unlock`,
  };
}

/**
 * `admin:unlock` of a locked agent: the unlock recorded (who, from what, why, what it asked), then
 * WAITING_FOR_EVENT with no reason and no halt. Returns the state and reason it left.
 *
 * @throws RangeError for an `addTokens` that is not a whole number >= 0, changing nothing.
 */
export function releaseLock(d: LockData, input: UnlockInput): { from: AgentState; reason?: LockReason } {
  const addTokens = input.addTokens ?? 0;
  if (!Number.isInteger(addTokens) || addTokens < 0)
    throw new RangeError(`addTokens must be a whole number >= 0, got ${addTokens}`);
  const from = d.agentState;
  const reason = d.reason;
  const record: UnlockRecord = { by: input.by ?? 'a human operator', from, resume: !!input.resume, addTokens };
  if (input.note) record.note = input.note;
  if (reason) record.reason = reason;
  d.unlocks = keepRecent([...d.unlocks, record]);
  d.agentState = 'WAITING_FOR_EVENT';
  d.reason = undefined;
  d.halt = undefined;
  return { from, ...(reason ? { reason } : {}) };
}
