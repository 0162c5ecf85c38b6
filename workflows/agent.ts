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
  currentUpdateInfo,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  makeContinueAsNewFunc,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { SubmittedTask } from '../activities/tools';
import { AgentEntity, newAgentData, type AgentData, type NextRun } from '../core/agent-entity';
import { budgetRefFor } from '../core/budget';
import { approvalAlert, lockoutAlert } from '../core/alerts';
import { approvalsReportSchema, decisionInputSchema, type PendingApproval } from '../core/approval';
import type { AgentConfig, TaskConfig } from '../core/config';
import { QUEUE_PRIORITY } from '../core/priority-inbox';
import type { PricingTable } from '../core/pricing';
import {
  haltInputSchema,
  LIMITS,
  humanMessageSchema,
  parsePayload,
  taskEndedSchema,
  taskProgressSchema,
  unlockInputSchema,
  type HumanMessage,
  type UnlockInput,
} from '../core/payloads';
import { RefusedError, isRequestError, normalizedError } from '../core/errors';
import { limitsInputSchema } from '../core/limits';
import { fatalLock } from '../core/safety-rungs';
import type { TaskRunOutput } from '../core/task-run';
import type { MessageResult } from '../core/contract';
import {
  agentStateQuery,
  approvalDecidedSignal,
  approvalsSignal,
  decideApprovalUpdate,
  haltSignal,
  limitsUpdate,
  messageSignal,
  messageUpdate,
  newVersionSignal,
  stopSignal,
  submitTaskUpdate,
  TASK_FAILED,
  TASK_WORKFLOW_TYPE,
  taskEndedSignal,
  taskProgressSignal,
  taskWorkflowId,
  unlockSignal,
  unlockUpdate,
} from './messages';
import { searchAttributes, startAttributes } from './search-attributes';
import { noToolWorker, notPicked, TOOL_QUEUE_START_TIMEOUT } from './tool-queue';
import type { taskWorkflow } from './task';
import { typed } from './typed';

// A regular activity, not a local one: several submits check at once, and concurrent local activities
// resume their handlers in completion order live but in scheduling order on replay, which reorders the
// handlers' commands. Activity completions are history events, so the order replays exactly.
const checkOptions = {
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '1 minute',
  retry: { initialInterval: '200 milliseconds', maximumAttempts: 3 },
} as const;
const { checkTaskLimits: checkOnWorkflowWorker } = proxyActivities<Activities>(checkOptions);

/**
 * The worker's submit check. A workflow worker whose tools run on a queue of their own answers its part
 * and names that queue: a tool worker there checks its policy and tools. None polls it: refused within
 * seconds, saying which queue and what to start.
 */
async function checkTaskLimits(task: SubmittedTask): Promise<{ refused?: string }> {
  const first = await checkOnWorkflowWorker(task);
  const queue = first.toolTaskQueue;
  if (first.refused || !queue) return first;
  const { checkTaskLimits: onToolWorker } = proxyActivities<Activities>({
    ...checkOptions,
    taskQueue: queue,
    scheduleToStartTimeout: TOOL_QUEUE_START_TIMEOUT,
  });
  try {
    return await onToolWorker(task);
  } catch (err) {
    if (notPicked(err)) return { refused: noToolWorker(queue) };
    throw err;
  }
}

const { alert } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

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
 * What the worker checks of a task's config at submit (and before a resume): its limits, tools, guide
 * and context strategy, and what its cost budget needs. The strategy is read loosely: a config carried
 * from a history recorded before context strategies has no `context`.
 */
function submitted(agentId: string, config: TaskConfig, agent: AgentConfig | undefined): SubmittedTask {
  return {
    workspace: config.workspace,
    tools: config.tools,
    llm: config.llm,
    guide: config.guide,
    ...(config.context?.strategy ? { context: { strategy: config.context.strategy } } : {}),
    ...costCheck(config, agent),
    ...(config.budget ? { budget: budgetRefFor(agentId, config.budget) } : {}),
  };
}

/**
 * The agent's messages. Every payload is checked with the contract's schemas (core/payloads.ts): an
 * update's validator refuses a bad one to its caller with a typed failure; a signal's handler drops it
 * with a warning. Either way it never reaches the agent's state, so no payload can wedge the workflow.
 * Returns where cancelled tasks' outputs arrive (`taskEnded`).
 */
function listen(agent: AgentEntity, report: () => void): Map<string, TaskRunOutput> {
  // One parse, shared by the validator and the handler (no validator runs on replay); then the worker
  // checks the task's limits against its policy, and the agent's state decides (it may have changed
  // while the worker looked).
  setHandler(
    submitTaskUpdate,
    async (raw) => {
      const updateId = currentUpdateInfo()?.id;
      const again = agent.answered(updateId);
      if (again) return again;
      const input = typed(() => agent.parseSubmit(raw));
      const config = input.config ?? agent.data.config;
      if (config) {
        const { refused } = await checkTaskLimits(submitted(agent.data.agentId, config, agent.data.config));
        if (refused)
          typed(() => {
            throw new RefusedError(refused);
          });
      }
      const out = typed(() => agent.submit(input, updateId));
      report();
      return out;
    },
    // Only the validator knows the time the submit arrived: one past its `acceptBy` is refused there.
    {
      validator: (raw) =>
        typed(() => agent.validateSubmit(agent.parseSubmit(raw), currentUpdateInfo()?.id, Date.now())),
      description: 'Submit a task: {goal, priority?, config?, taskId?, acceptBy?}. Refused while the agent is locked.',
    },
  );

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

  // Only an admin (the HTTP API's role; whoever may send updates, on Temporal) changes the limits.
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

  const message = async (m: HumanMessage): Promise<MessageResult> => {
    const { forwardTo } = agent.message(m);
    const taskId = agent.data.current?.task.taskId;
    if (forwardTo && (await signalTask(forwardTo, (handle) => handle.signal(messageSignal, m))))
      return { delivered: 'running task', taskId };
    if (forwardTo) agent.keepMessage(m);
    return { delivered: 'next task' };
  };
  const messageHelp = 'A human follow-up for the running task: {text, by?}; kept for the next task when none runs.';
  setHandler(messageUpdate, (raw) => message(parsePayload(humanMessageSchema(), raw, 'message')), {
    validator: (raw) =>
      typed(() => {
        parsePayload(humanMessageSchema(), raw, 'message');
        agent.validateMessage();
      }),
    description: messageHelp,
  });
  // The signal form cannot answer: a refused message (too many) is logged and dropped.
  setHandler(
    messageSignal,
    (raw) => ifValid(humanMessageSchema(), raw, 'message', (m) => refusedIsLogged('message', () => message(m))),
    { description: messageHelp },
  );

  // A human's decision on a waiting call: checked against what waits (the validator, and the handler
  // again, since two approvers may race), recorded with who decided, and forwarded to the task.
  setHandler(
    decideApprovalUpdate,
    async (raw) => {
      const input = typed(() => parsePayload(decisionInputSchema(), raw, 'decideApproval'));
      const { decision, forwardTo } = typed(() => agent.decide(input, new Date().toISOString()));
      report();
      await signalTask(forwardTo, (handle) => handle.signal(approvalDecidedSignal, decision));
      return decision;
    },
    {
      validator: (raw) =>
        typed(() => agent.validateDecision(parsePayload(decisionInputSchema(), raw, 'decideApproval'), Date.now())),
      description:
        'Decide a tool call that waits for approval: {callId, decision: "approve"|"deny", reason?, note?, args?, by?}. ' +
        '`args` runs the call with edited arguments.',
    },
  );
  setHandler(
    approvalsSignal,
    (raw) =>
      ifValid(approvalsReportSchema(), raw, 'approvals', async (r) => {
        const asked = agent.approvalsReported(r);
        report();
        await Promise.all(asked.map((p) => alertApproval(agent, p)));
      }),
    { description: 'Internal: the running task’s calls that wait for approval, whenever they change. Not for humans.' },
  );

  setHandler(
    taskProgressSignal,
    (raw) =>
      ifValid(taskProgressSchema(), raw, 'taskProgress', (p) => {
        agent.progress(p);
        report();
      }),
    { description: 'Internal: sent by the running task every few ticks. Not for humans.' },
  );

  // A cancelled task's output: a workflow that ends CANCELED has no result, so the task sends it first.
  const ended = new Map<string, TaskRunOutput>();
  setHandler(
    taskEndedSignal,
    (raw) =>
      ifValid(taskEndedSchema(), raw, 'taskEnded', (out) => {
        ended.set(out.result.workflowId, out as TaskRunOutput);
      }),
    { description: 'Internal: sent by a cancelled task with its output, just before it ends. Not for humans.' },
  );

  // Nothing to do but wake: the loop sees the new version and continues as new onto it when idle.
  setHandler(newVersionSignal, () => undefined, {
    description: 'Internal: a new Worker Deployment Version is current; an idle agent moves to it. Not for humans.',
  });

  setHandler(agentStateQuery, () => agent.status(), {
    description:
      "The agent's full status: state, reason, tokens, queue, current/suspended task, recent results, unlock records.",
  });
  return ended;
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

/**
 * What the submit check needs to know of a task's cost budget: the budget it runs with (its own, else
 * its agent's) and the agent's price table; nothing without a cost budget (the check's input stays as it was).
 */
function costCheck(
  task: Pick<TaskConfig, 'safety' | 'pricing'>,
  agent: AgentConfig | undefined,
): { costBudgetUsd?: number; pricing?: PricingTable } {
  const costBudgetUsd = task.safety.costBudgetUsd ?? agent?.safety.costBudgetUsd;
  if (costBudgetUsd === undefined) return {};
  return { costBudgetUsd, ...(task.pricing ? { pricing: task.pricing } : {}) };
}

/** `typed` for an async update handler: a contract error reaches the caller as its typed failure. */
async function typedAsync<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    return typed(() => {
      throw err;
    });
  }
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

/** Run a signal handler with a checked payload; a bad payload is logged and dropped. */
async function ifValid<T>(
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
async function refusedIsLogged(what: string, run: () => unknown): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (!isRequestError(err)) throw err;
    log.warn(`refused a ${what} signal: ${err.message}`);
  }
}

/** Signal the running task; it may have just finished, which the caller handles. Returns whether it was delivered. */
async function signalTask(
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

/**
 * Page the agent's operators once for a call that waits for a human: which call, and the commands that
 * decide it. Like a lockout's alert, an undeliverable one is logged and never ends the agent.
 */
async function alertApproval(agent: AgentEntity, p: PendingApproval): Promise<void> {
  const { agentId } = agent.data;
  try {
    await alert({ ...approvalAlert(agentId, p), agentId, taskId: p.taskId, workflowId: p.workflowId });
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.error('the approval alert could not be delivered', { agentId, callId: p.callId, error: String(err) });
  }
}
