/**
 * What a halt (or any lock) left to continue, in words for `unlock --resume` and `resubmit` when what
 * was asked for is not there: a halt cancels the running task (it ends CANCELLED, nothing is suspended)
 * and records the queued ones as cancelled before they started, which `resubmit` queues again; only a
 * breaker's lock suspends a task for `unlock --resume`.
 */
import type { AgentStatus } from './contract';

/** The parts of an agent's state these answers read. */
export type AfterHalt = Pick<AgentStatus, 'suspendedTask' | 'cancelledTasks' | 'tasks'>;

/**
 * The note an `unlock --resume` adds when the agent had no suspended task: why, and what there is instead.
 * Undefined when a task was suspended (the unlock resumes it and says so).
 *
 * ```ts
 * nothingToResume('a1', { tasks: [{ taskId: 'task-3', outcome: 'CANCELLED', … }], cancelledTasks: [], … })
 * // "nothing to resume: no task was suspended (task-3 ended CANCELLED: a halt cancels the running task, …)"
 * ```
 */
export function nothingToResume(agentId: string, st: AfterHalt): string | undefined {
  if (st.suspendedTask) return undefined;
  const last = st.tasks.at(-1);
  const why =
    last?.outcome === 'CANCELLED'
      ? ` (${last.taskId} ended CANCELLED: a halt cancels the running task rather than suspending it; submit its goal again to run it anew)`
      : ` (${last ? `${last.taskId} ended ${last.outcome}; ` : ''}only a task a breaker's lock suspended can be resumed)`;
  return `nothing to resume: no task was suspended${why}; ${queuedPart(agentId, st)}`;
}

/**
 * Why `resubmit` has nothing under `taskId`: a task that ran (and how it ended), or one the agent never
 * had; and which tasks it can queue again.
 *
 * ```ts
 * notResubmittable('a1', 'task-9', st) // "agent a1 has no cancelled task task-9: …"
 * ```
 */
export function notResubmittable(agentId: string, taskId: string, st: AfterHalt): string {
  const known = st.cancelledTasks.map((t) => t.taskId);
  const ran = st.tasks.find((t) => t.taskId === taskId);
  const list = known.length
    ? `its cancelled tasks are ${known.join(', ')}`
    : 'a halt cancelled none of its queued tasks, so there is nothing to resubmit';
  const fate = ran
    ? `; ${taskId} started and ended ${ran.outcome} (resubmit queues again only tasks a halt cancelled before they started: ` +
      `submit its goal again to run it anew${ran.outcome === 'SUSPENDED' ? `, or \`starry unlock ${agentId} --resume\` continues it` : ''})`
    : '';
  return `agent ${agentId} has no cancelled task ${taskId}: ${list}${fate}`;
}

/** What the halt cancelled before it started, and the command that queues it again. */
function queuedPart(agentId: string, st: AfterHalt): string {
  const ids = st.cancelledTasks.map((t) => t.taskId);
  if (!ids.length) return 'no queued task was cancelled, so there is nothing to resubmit either';
  return `queued task(s) cancelled before they started: ${ids.join(', ')} (\`starry resubmit ${agentId} ${ids[0]}\` queues one again)`;
}
