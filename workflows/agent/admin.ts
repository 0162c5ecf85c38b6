/**
 * The agent's human overrides: SYSTEM_HALT (and its alias), `admin:unlock` (an update that answers, a
 * signal that cannot) and `admin:limits`. A halt is priority 0: it stops the agent even when its payload
 * is malformed, and is forwarded to the running task at once.
 */
import { log, setHandler } from '@temporalio/workflow';
import type { AgentEntity } from '../../core/agent-entity';
import { RefusedError } from '../../core/errors';
import { limitsInputSchema } from '../../core/limits';
import { haltInputSchema, parsePayload, unlockInputSchema, type UnlockInput } from '../../core/payloads';
import { haltSignal, limitsUpdate, stopSignal, unlockSignal, unlockUpdate } from '../messages';
import { typed } from '../typed';
import { checkTaskLimits, submitted } from './activities';
import { ifValid, refusedIsLogged, signalTask, typedAsync, type Report } from './handling';

/** Handle SYSTEM_HALT and its alias `stop`. */
export function listenHalt(agent: AgentEntity, report: Report): void {
  // SYSTEM_HALT is priority 0 and always stops the agent, even when its payload is malformed.
  const halt = async (raw: unknown) => {
    const parsed = haltInputSchema().safeParse(raw ?? {});
    if (!parsed.success)
      log.warn('SYSTEM_HALT with an invalid payload: halting anyway, without its by/note', {
        error: parsed.error.message,
      });
    const { forwardTo } = agent.halt(parsed.success ? parsed.data : {});
    report();
    if (forwardTo) await signalTask(forwardTo, (handle) => handle.cancel());
  };
  setHandler(haltSignal, halt, {
    description:
      'Priority-0 kill switch: stop the agent now, cancel the running call, clear the queue. Payload {by?, note?}.',
  });
  setHandler(stopSignal, halt, { description: 'Alias of SYSTEM_HALT.' });
}

/** Handle `admin:unlock`, as an update and as a signal. */
export function listenUnlock(agent: AgentEntity, report: Report): void {
  const unlock = async (u: UnlockInput) => {
    if (u.resume) await checkResume();
    const out = agent.unlock(u);
    log.info('admin:unlock', { ...out, by: u.by, note: u.note });
    report();
    return out;
  };
  // A suspended task resumes with the config it was submitted with, which the worker's policy may no
  // longer allow: the worker is asked first, and a resume it would refuse leaves the agent as it is.
  const checkResume = async () => {
    const d = agent.data;
    const { suspended, agentState } = d;
    const config = suspended?.task.config ?? d.config;
    if (!suspended || !agent.locked || !config) return;
    const { refused } = await checkTaskLimits(submitted(d.agentId, config, d.config));
    if (refused) throw new RefusedError(cannotResume(d.agentId, agentState, suspended.task.taskId, refused));
    if (d.suspended !== suspended || d.agentState !== agentState) {
      throw new RefusedError(
        `agent ${d.agentId} changed (now ${d.agentState}) while the worker checked its suspended task: look at it again, then unlock it`,
      );
    }
  };
  const unlockHelp = 'Leave a locked state: {resume?, addTokens?, note?, by?}. resume continues the suspended task.';
  setHandler(
    unlockUpdate,
    (raw) => typedAsync(() => unlock(parsePayload(unlockInputSchema(), raw ?? {}, 'admin:unlock'))),
    {
      validator: (raw) => typed(() => parsePayload(unlockInputSchema(), raw ?? {}, 'admin:unlock')),
      description: unlockHelp,
    },
  );
  setHandler(
    unlockSignal,
    (raw) =>
      ifValid(unlockInputSchema(), raw ?? {}, 'admin:unlock', (u) => refusedIsLogged('admin:unlock', () => unlock(u))),
    { description: unlockHelp },
  );
}

/** Handle `admin:limits`: only an admin (the HTTP API's role; whoever may send updates, on Temporal) changes them. */
export function listenLimits(agent: AgentEntity, report: Report): void {
  setHandler(
    limitsUpdate,
    (raw) =>
      typed(() => {
        const input = parsePayload(limitsInputSchema(), raw, 'admin:limits');
        const out = agent.setLimits(input);
        log.info('admin:limits', { changed: out.changed, by: input.by, note: input.note });
        report();
        return out;
      }),
    {
      validator: (raw) => typed(() => agent.validateLimits(parsePayload(limitsInputSchema(), raw, 'admin:limits'))),
      description:
        "Change the agent's limits (its safety fields, raising or lowering them): {safety: {tokenBudget?, maxTicks?, …}, note?, by?}. " +
        'The next task runs with them.',
    },
  );
}

/** Why a suspended task cannot resume on this worker, and what helps. */
function cannotResume(agentId: string, state: string, taskId: string, refused: string): string {
  return (
    `task ${taskId} cannot resume: the worker's policy no longer allows its config. It stays suspended and agent ${agentId} stays ${state}. ` +
    `\`starry unlock ${agentId}\` without --resume ends the task ABORTED (its transcript kept) and lets the agent take tasks: ` +
    'submit its goal again with a config within the policy. ' +
    `Or ask the worker operator to widen STARRY_WORKER_POLICY, then \`starry unlock ${agentId} --resume\` again.\n${refused}`
  );
}
