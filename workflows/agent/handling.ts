/**
 * What the agent workflow's handlers share: a signal's payload checked (a bad one logged and dropped), a
 * signal's refusal logged (it has no caller to tell), an async update's contract error typed for its
 * caller, and a signal to the running task that may have just ended.
 */
import { getExternalWorkflowHandle, log } from '@temporalio/workflow';
import { isRequestError } from '../../core/errors';
import { typed } from '../typed';

/** What a handler calls after it changed the agent: its search attributes and details written. */
export type Report = () => void;

/** `typed` for an async update handler: a contract error reaches the caller as its typed failure. */
export async function typedAsync<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    return typed(() => {
      throw err;
    });
  }
}

/** Run a signal handler with a checked payload; a bad payload is logged and dropped. */
export async function ifValid<T>(
  schema: { safeParse(raw: unknown): { success: true; data: T } | { success: false; error: Error } },
  raw: unknown,
  what: string,
  handle: (value: T) => unknown,
): Promise<void> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    log.warn(`ignored a ${what} signal with an invalid payload`, { error: parsed.error.message });
    return;
  }
  await handle(parsed.data);
}

/**
 * Run a signal's effect; a refusal (it has no caller to tell) is logged and dropped, never thrown into the workflow.
 */
export async function refusedIsLogged(what: string, run: () => unknown): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (!isRequestError(err)) throw err;
    log.warn(`refused a ${what} signal: ${err.message}`);
  }
}

/** Signal the running task; it may have just finished, which the caller handles. Returns whether it was delivered. */
export async function signalTask(
  workflowId: string,
  send: (h: ReturnType<typeof getExternalWorkflowHandle>) => Promise<void>,
): Promise<boolean> {
  try {
    await send(getExternalWorkflowHandle(workflowId));
    return true;
  } catch (err) {
    log.warn('could not signal the running task (it may have just ended)', { workflowId, error: String(err) });
    return false;
  }
}
