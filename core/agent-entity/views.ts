/**
 * What an agent shows (docs/ARCHITECTURE.md#workflows): its search attributes (`reportedOf`), its `state`
 * query (`statusOf`) and its current details in the Web UI (`detailsOf`). One function per view, each
 * read from the agent's data alone.
 */
import { approvalLine } from '../approval';
import type { AgentStatus } from '../contract';
import { LIMIT_FIELDS } from '../limits';
import { formatLlmSpec } from '../llm-spec';
import { isLocked, type Reported } from '../types';
import { rulesText } from './agent-limits';
import type { AgentData } from './data';
import { inOrder } from './inbox';
import { lastTick } from './results';
import type { NextRun } from './runs';
import { spendOf, tokensWithRun } from './usage';

/**
 * What an agent reports as its search attributes: its state, lock reason and tokens (the running task's
 * included), and the running task's tick, else its latest task's last tick (so a locked agent shows the
 * tick its task stopped at). A new agent's are what the client starts it with.
 *
 * ```ts
 * reportedOf(newAgentData('a1')) // { agentId: 'a1', agentState: 'WAITING_FOR_EVENT', tick: 0, tokensUsed: 0, lockReason: null }
 * ```
 */
export function reportedOf(d: AgentData): Reported {
  return {
    agentId: d.agentId,
    agentState: d.agentState,
    tick: d.current?.tick ?? lastTick(d),
    tokensUsed: tokensWithRun(d, d.current),
    ...(d.lastErrorCode ? { lastErrorCode: d.lastErrorCode } : {}),
    lockReason: d.reason?.code ?? null,
  };
}

/** What a task about to start reports (`TaskRun.reported`), given as its search attributes at its start. */
export function taskStartReportedOf(agentId: string, next: NextRun): Reported {
  return {
    agentId,
    agentState: 'EXECUTING',
    tick: next.checkpoint?.ticks ?? 0,
    tokensUsed: next.checkpoint?.tokensUsed ?? 0,
    lockReason: null,
  };
}

/** The agent's `state` query (`AgentStatus`). */
export function statusOf(d: AgentData): AgentStatus {
  const s: AgentStatus = {
    agentId: d.agentId,
    agentState: d.agentState,
    tokensUsed: tokensWithRun(d, d.current),
    tokenBudget: d.config?.safety.tokenBudget ?? 0,
    ...spendOf(d, d.current, d.config?.safety.costBudgetUsd),
    queue: inOrder(d).map((t) => ({ taskId: t.taskId, priority: t.priority, goal: t.goal })),
    cancelledTasks: d.cancelledTasks,
    counters: d.counters,
    tasks: d.tasks,
    unlocks: d.unlocks,
    limitChanges: d.limitChanges ?? [],
    guide: d.config?.guide ?? '',
    llm: d.config ? formatLlmSpec(d.config.llm) : '',
  };
  if (d.config) s.limits = d.config.safety;
  if (d.config?.tools.approval) s.approvalRules = d.config.tools.approval;
  if (d.reason) s.reason = d.reason;
  if (d.halt) s.halt = d.halt;
  if (d.current)
    s.currentTask = {
      taskId: d.current.task.taskId,
      workflowId: d.current.workflowId,
      tick: d.current.tick,
      runTokens: d.current.runTokens,
      ...(d.current.runCostUsd !== undefined ? { runCostUsd: d.current.runCostUsd } : {}),
      ...(d.current.traceId ? { traceId: d.current.traceId } : {}),
    };
  if (d.suspended) s.suspendedTask = { taskId: d.suspended.task.taskId, workflowId: d.suspended.workflowId };
  if (d.approvals?.length) s.approvals = d.approvals;
  return s;
}

/** The Web UI's current details of the agent (markdown): its state and why, first, then what it holds. */
export function detailsOf(d: AgentData): string {
  const queue = inOrder(d);
  const c = d.config;
  return [
    `### Agent ${d.agentId} · ${d.agentState}${d.reason ? ` (${d.reason.code})` : ''}`,
    d.reason ? `> ${d.reason.message}` : '',
    d.halt ? `> and SYSTEM_HALT by ${d.halt.by}${d.halt.note ? `: ${d.halt.note}` : ''} while locked` : '',
    isLocked(d.agentState) ? `- **locked**: refuses tasks until \`starry unlock ${d.agentId}\`` : '',
    c
      ? `- tokens **${d.tokensUsed}** / ${c.safety.tokenBudget}${d.costUsd !== undefined || c.safety.costBudgetUsd !== undefined ? ` · cost **$${d.costUsd ?? 0}**${c.safety.costBudgetUsd !== undefined ? ` / $${c.safety.costBudgetUsd}` : ''}` : ''} · guide \`${c.guide}\` · llm \`${formatLlmSpec(c.llm)}\``
      : `- tokens **${d.tokensUsed}** · no config yet`,
    c
      ? `- limits: ${LIMIT_FIELDS.filter((f) => c.safety[f] !== undefined)
          .map((f) => `${f} ${c.safety[f]}`)
          .join(' · ')}`
      : '',
    c?.tools.approval ? `- approval rules: ${rulesText(c.tools.approval)}` : '',
    d.limitChanges?.length ? `- limits last changed by ${d.limitChanges.at(-1)!.by}` : '',
    d.current ? `- running **${d.current.task.taskId}** at tick ${d.current.tick}` : '- no task running',
    ...(d.approvals ?? []).map((p) => approvalLine(d.agentId, p)),
    d.suspended
      ? `- suspended **${d.suspended.task.taskId}**: \`starry unlock ${d.agentId} --resume\` continues it`
      : '',
    `- queue: ${queue.length ? queue.map((t) => `${t.taskId} (p${t.priority})`).join(', ') : 'empty'}`,
    d.cancelledTasks.length ? `- cancelled by halt: ${d.cancelledTasks.length}` : '',
  ]
    .filter(Boolean)
    .join('\n');
}
