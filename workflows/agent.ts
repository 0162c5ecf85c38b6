/**
 * The agent entity workflow (`agent-<agentId>`): inbox, lock state, budget and counters across tasks;
 * runs tasks one at a time as child task workflows; SYSTEM_HALT is handled on arrival. Each run is
 * pinned to the Worker Deployment Version it started on and moves to the current one at its
 * continue-as-new, its state plain data (docs/ARCHITECTURE.md#versioning).
 */
import {
  ApplicationFailure,
  CancelledFailure,
  ChildWorkflowFailure,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  makeContinueAsNewFunc,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { AgentEntity, newAgentData, type AgentData, type NextRun } from '../core/agent-entity';
import { lockoutAlert } from '../core/alerts';
import type { AgentConfig } from '../core/config';
import { QUEUE_PRIORITY } from '../core/priority-inbox';
import { LIMITS } from '../core/payloads';
import { normalizedError } from '../core/errors';
import { fatalLock } from '../core/safety-rungs';
import type { TaskRunOutput } from '../core/task-run';
import { agentStateQuery, TASK_FAILED, TASK_WORKFLOW_TYPE, taskWorkflowId } from './messages';
import { searchAttributes, startAttributes } from './search-attributes';
import type { taskWorkflow } from './task';
import { alert } from './agent/activities';
import { listenHalt, listenLimits, listenUnlock } from './agent/admin';
import { listenApprovals } from './agent/approvals';
import type { Report } from './agent/handling';
import { listenMessages } from './agent/human-messages';
import { listenSubmits } from './agent/submit';
import { listenTaskReports } from './agent/task-reports';

export interface AgentWorkflowInput {
  agentId: string;
  /** The agent's config; absent, it takes its first task's. */
  config?: AgentConfig;
  /** State carried by continue-as-new. */
  carried?: AgentData;
  /**
   * Continue-as-new, idle, once history passes this many events (default `LIMITS.agentRunEvents`; tests force it small); Temporal's suggestion always counts.
   */
  continueAsNewAfterEvents?: number;
}

/** A new run starts on the deployment's current version, whichever version ran the one before. */
const continueOnCurrentVersion = makeContinueAsNewFunc<typeof agentWorkflow>({
  initialVersioningBehavior: 'AUTO_UPGRADE',
});

/**
 * The long-lived agent. Start it with `submitTask` as an update-with-start; query `state` for status.
 */
export async function agentWorkflow(input: AgentWorkflowInput): Promise<void> {
  const agent = new AgentEntity(input.carried ?? newAgentData(input.agentId, input.config), (taskId) =>
    taskWorkflowId(input.agentId, taskId),
  );
  const report = (): void => {
    const current = workflowInfo().typedSearchAttributes;
    const changed = searchAttributes(agent.reported()).filter((u) => (current.get(u.key) ?? null) !== u.value);
    if (changed.length) upsertSearchAttributes(changed);
    setCurrentDetails(agent.details());
  };
  const ended = listen(agent, report);

  // A new run moves to the deployment's current version: when one became current (between tasks, so a
  // running task ends on the code it started with), and when the history is long (while idle).
  const versionChanged = () => workflowInfo().targetWorkerDeploymentVersionChanged;
  const historyFull = () =>
    workflowInfo().continueAsNewSuggested ||
    workflowInfo().historyLength >= (input.continueAsNewAfterEvents ?? LIMITS.agentRunEvents);
  const moveOn = () => versionChanged() || (!agent.hasWork() && historyFull());

  // A submit starts the agent and brings its config. Started by one that was refused (by the validator,
  // or by the worker's policy in the handler) and holding nothing, it ends now, in the workflow task
  // that refused it: a refused submit leaves no agent behind. A submit that came meanwhile keeps it.
  if (!input.carried && agent.empty) {
    await condition(() => !agent.empty || allHandlersFinished());
    if (agent.empty) return;
  }
  report();
  for (;;) {
    await condition(() => agent.hasWork() || moveOn());
    if (moveOn()) {
      // Handlers finish first, so no update or signal is lost.
      await condition(allHandlersFinished);
      await continueOnCurrentVersion({ ...input, carried: agent.data });
    }
    const next = agent.startNext();
    if (!next) continue;
    report();
    const output = await runTask(agent, next, ended);
    agent.finish(output);
    report();
    // The lock this run put the agent in, if it took (a halt that came first keeps STOPPED): paged once.
    const notice = output.lock ? lockoutAlert(agent.data) : undefined;
    if (notice) {
      try {
        await alert({
          ...notice,
          agentId: agent.data.agentId,
          taskId: output.result.taskId,
          workflowId: output.result.workflowId,
          ...(output.result.error ? { error: output.result.error } : {}),
        });
      } catch (err) {
        if (isCancellation(err)) throw err;
        // An undeliverable alert must not end the entity: its lock, inbox and counters stay for a human.
        log.error('the daemon alert could not be delivered', {
          agentId: agent.data.agentId,
          reason: notice.reason,
          error: String(err),
        });
      }
    }
  }
}

/**
 * The agent's messages, one group a module (workflows/agent/), registered in this order. Every payload
 * is checked with the contract's schemas (core/payloads.ts): an update's validator refuses a bad one to
 * its caller with a typed failure; a signal's handler drops it with a warning. Either way it never
 * reaches the agent's state, so no payload can wedge the workflow. Returns where cancelled tasks'
 * outputs arrive (`taskEnded`).
 */
function listen(agent: AgentEntity, report: Report): Map<string, TaskRunOutput> {
  listenSubmits(agent, report);
  listenHalt(agent, report);
  listenUnlock(agent, report);
  listenLimits(agent, report);
  listenMessages(agent);
  listenApprovals(agent, report);
  const ended = listenTaskReports(agent, report);
  answerQueries(agent);
  return ended;
}

/** The agent's `state` query. */
function answerQueries(agent: AgentEntity): void {
  setHandler(agentStateQuery, () => agent.status(), {
    description:
      "The agent's full status: state, reason, tokens, queue, current/suspended task, recent results, unlock records.",
  });
}

async function runTask(agent: AgentEntity, next: NextRun, ended: Map<string, TaskRunOutput>): Promise<TaskRunOutput> {
  const d = agent.data;
  try {
    const handle = await startChild<typeof taskWorkflow>(TASK_WORKFLOW_TYPE, {
      workflowId: next.workflowId,
      // Behind the agent's own workflow tasks (a halt, a result) when the workers are saturated.
      priority: { priorityKey: QUEUE_PRIORITY.task },
      args: [
        {
          agentId: d.agentId,
          taskId: next.task.taskId,
          goal: next.task.goal,
          config: next.config,
          counters: d.counters,
          agentTokensUsed: d.tokensUsed,
          ...(d.costUsd !== undefined ? { agentCostUsd: d.costUsd } : {}),
          ...(next.checkpoint ? { checkpoint: next.checkpoint } : {}),
          ...(next.task.traceparent ? { traceparent: next.task.traceparent } : {}),
          messages: agent.takePendingMessages(),
        },
      ],
      staticSummary: `${next.checkpoint ? 'resume ' : ''}${next.task.taskId}: ${next.task.goal.slice(0, 100)}`,
      staticDetails: `Agent **${d.agentId}** · priority ${next.task.priority}\n\n${next.task.goal}`,
      // What the task's first report would write, given at its start instead.
      typedSearchAttributes: startAttributes(agent.taskStartReported(next)),
    });
    return await handle.result();
  } catch (err) {
    if (
      err instanceof ChildWorkflowFailure &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type === TASK_FAILED
    ) {
      return err.cause.details?.[0] as TaskRunOutput;
    }
    const delivered = ended.get(next.workflowId);
    ended.delete(next.workflowId);
    if (err instanceof ChildWorkflowFailure && err.cause instanceof CancelledFailure && delivered) return delivered;
    if (isCancellation(err)) throw err;
    // The task workflow broke (a bug, a termination): the agent records it and stops for a human.
    const message =
      err instanceof Error
        ? `${err.message}${err.cause instanceof Error ? `: ${err.cause.message}` : ''}`
        : String(err);
    const error = normalizedError({ code: 'E_INTERNAL', kind: 'fatal', source: 'task workflow', message });
    return {
      result: {
        agentId: d.agentId,
        taskId: next.task.taskId,
        workflowId: next.workflowId,
        outcome: 'FAILED',
        agentState: 'ERROR_PAUSED',
        ticks: d.current?.tick ?? 0,
        tokensUsed: d.current?.runTokens ?? 0,
        toolCalls: [],
        injections: [],
        error,
      },
      counters: d.counters,
      runTokens: d.current?.runTokens ?? 0,
      lock: fatalLock(error),
    };
  }
}
