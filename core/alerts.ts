/**
 * Daemon alerts (seeds 002, Type C: a breaker "triggers a daemon alarm"): which events page the
 * worker's operators, how loudly, and the command a human runs about them. Pure: the agent workflow
 * sends what this says through the `alert` activity (activities/alert.ts), which adds the agent, the
 * task, an id, the time and a link, and delivers it to the log, the webhook and SNS.
 */
import { approveCommand, denyCommand, type PendingApproval } from './approval';
import { isLocked, type AgentState, type LockReason } from './types';

/**
 * What raised an alert. `lockout`: the agent locked itself (a breaker, a budget stop, a fatal error).
 * `approval`: a tool call waits for a human's decision (core/approval.ts). Both go through the same
 * sinks with the same event shape.
 */
export type AlertKind = 'lockout' | 'approval';

/**
 * How loudly: `critical` when the agent or its environment is broken (ERROR_PAUSED: a fatal error, an
 * error cascade) and someone must fix something; `warning` when a safety limit held the agent
 * (SAFETY_LOCKOUT, a budget STOPPED) and someone must decide whether it goes on.
 */
export type AlertSeverity = 'critical' | 'warning';

/** What one alert says, whatever raised it. */
export interface AlertNotice {
  kind: AlertKind;
  severity: AlertSeverity;
  /** The agent's state once the event happened. */
  agentState: AgentState;
  /** Why: for a lockout, the lock's reason as `starry status` shows it. */
  reason: { code: string; message: string };
  /** The command a human runs about it (`N` stands for a number to choose). */
  command: string;
  /** What to do, in one sentence that names the command. */
  action: string;
}

/** What `lockoutAlert` needs of the agent: its `AgentData` has these fields. */
export interface LockedAgent {
  agentId: string;
  agentState: AgentState;
  reason?: LockReason;
  /** The task the lock suspended, kept for `unlock --resume`, if any. */
  suspended?: unknown;
}

/**
 * The alert a lock raises, once, when the agent enters it: every lock the agent put itself in
 * (SAFETY_LOCKOUT, a budget STOPPED, ERROR_PAUSED), with its reason and the unlock command. None for a
 * SYSTEM_HALT (a human stopped it and knows) nor for an agent that is not locked.
 *
 * ```ts
 * lockoutAlert({ agentId: 'a1', agentState: 'STOPPED', reason: { code: 'BUDGET_EXHAUSTED', message: '…' }, suspended: {} })
 * // { kind: 'lockout', severity: 'warning', command: 'starry unlock a1 --resume --add-tokens N', … }
 * lockoutAlert({ agentId: 'a1', agentState: 'STOPPED', reason: { code: 'SYSTEM_HALT', message: '…' } }) // undefined
 * ```
 */
export function lockoutAlert(agent: LockedAgent): AlertNotice | undefined {
  const { agentId, agentState, reason } = agent;
  if (!reason || !isLocked(agentState) || reason.code === 'SYSTEM_HALT') return undefined;
  const resume = agent.suspended !== undefined && agent.suspended !== null;
  const unlock = `starry unlock ${agentId}`;
  const orAbort = resume ? ` (plain \`${unlock}\` ends the suspended task ABORTED)` : '';
  const notice = (severity: AlertSeverity, command: string, action: string): AlertNotice => ({
    kind: 'lockout',
    severity,
    agentState,
    reason,
    command,
    action,
  });
  const resumed = resume ? `${unlock} --resume` : unlock;
  if (agentState === 'ERROR_PAUSED')
    return notice(
      'critical',
      resumed,
      reason.message.startsWith('E_BLOB_MISSING')
        ? `Fix the transcript store named in the reason (one store per task queue), then \`${resumed}\`${orAbort}.`
        : `Fix the cause named in the reason (credentials, config, the worker, the tools' environment), then \`${resumed}\`${orAbort}.`,
    );
  if (reason.code === 'BUDGET_EXHAUSTED') {
    const command = `${resumed} --add-tokens N`;
    return notice(
      'warning',
      command,
      `The agent used its token budget: \`${command}\` adds N tokens${resume ? ' and continues the task' : ''}${orAbort}.`,
    );
  }
  if (reason.code === 'COST_BUDGET_EXHAUSTED') {
    const command = `starry limits ${agentId} --cost-budget-usd N && ${resumed}`;
    return notice(
      'warning',
      command,
      `The agent spent its cost budget: raise it (\`starry limits ${agentId} --cost-budget-usd N\`, an admin's act), then \`${resumed}\`${resume ? ' continues the task' : ''}${orAbort}.`,
    );
  }
  if (reason.code === 'SHARED_BUDGET_EXHAUSTED') {
    return notice(
      'warning',
      resumed,
      `The shared budget it draws from is spent: an admin raises it (\`starry budget raise <name> --tokens N\`, the reason names it), then \`${resumed}\`${resume ? ' continues the task' : ''}${orAbort}.`,
    );
  }
  return notice(
    'warning',
    resumed,
    `Look at why it locked, then \`${resumed}\`${resume ? ' continues the task with a fresh allowance' : ' lets it take tasks again'}${orAbort}.`,
  );
}

/**
 * The alert a call that waits for approval raises, once per call: which call, by which rule, until
 * when, and the commands that decide it. A `warning`: nothing is broken, but the agent waits for a
 * person (a receiver routes it by `kind`).
 *
 * ```ts
 * approvalAlert('a1', pending) // { kind: 'approval', severity: 'warning', command: 'starry approve a1 t3.0', … }
 * ```
 */
export function approvalAlert(agentId: string, p: PendingApproval): AlertNotice {
  const args = JSON.stringify(p.args) ?? '';
  const command = approveCommand(agentId, p.callId);
  return {
    kind: 'approval',
    severity: 'warning',
    agentState: 'WAITING_FOR_APPROVAL',
    reason: {
      code: 'APPROVAL',
      message: `${p.tool} ${args.length > 500 ? `${args.slice(0, 500)}…` : args} waits for approval (call ${p.callId} of ${p.taskId}, rule ${p.rule}${p.from === 'worker' ? " of the worker's policy" : ''})`,
    },
    command,
    action: `Approve it with \`${command}\` (--args to edit its arguments) or deny it with \`${denyCommand(agentId, p.callId)}\` before ${p.expiresAt}; after that it counts as denied.`,
  };
}
