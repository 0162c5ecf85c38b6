/**
 * How a task run ends (seeds: the safety ladder's actions, the three kinds of pain): a breaker suspends
 * it, resumable by unlock; an error fails it, a fatal one also pausing the agent; a halt cancels it.
 */
import type { NormalizedError } from '../errors';
import type { LockVerdict } from '../safety-monitor';
import { fatalLock } from '../safety-rungs';
import type { TaskEnd } from './io';

/** A breaker stopped the run: SUSPENDED, the agent in the lock's state. */
export function suspended(lock: LockVerdict): TaskEnd {
  return { outcome: 'SUSPENDED', agentState: lock.agentState, lock };
}

/** The run failed: a fatal error also pauses the agent (FATAL, alert); any other leaves it waiting. */
export function failed(error: NormalizedError): TaskEnd {
  return error.kind === 'fatal'
    ? { outcome: 'FAILED', agentState: 'ERROR_PAUSED', error, lock: fatalLock(error) }
    : { outcome: 'FAILED', agentState: 'WAITING_FOR_EVENT', error };
}

/** The run was halted: CANCELLED, the agent STOPPED. */
export function cancelled(): TaskEnd {
  return {
    outcome: 'CANCELLED',
    agentState: 'STOPPED',
    reason: { code: 'SYSTEM_HALT', message: 'stopped by a human' },
  };
}
