/**
 * The client side of the public contract: submit a task (update-with-start of the agent), wait for its
 * result, read state, halt, unlock, message. The CLI, the HTTP API and the tests all use this. A client
 * for a tenant (`forTenant`, `tenant` option) acts only on that tenant's agents and tasks, naming its
 * agents by their own ids (core/tenant.ts).
 */
import {
  Client,
  WithStartWorkflowOperation,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type Connection,
  type WorkflowUpdateHandle,
} from '@temporalio/client';
import { ApplicationFailure, defaultPayloadConverter, type UpdateDefinition } from '@temporalio/common';
import { decodeTypedSearchAttributes } from '@temporalio/common/lib/converter/payload-search-attributes';
import { temporal } from '@temporalio/proto';
import type { ApprovalDecision } from '../core/approval';
import type { TaskConfig } from '../core/config';
import {
  AgentIdSchema,
  DecisionInputSchema,
  HaltInputSchema,
  IdempotencyKeySchema,
  SUBMIT_EXPIRED,
  TaskEndedSchema,
  HumanMessageSchema,
  parsePayload,
  SubmitTaskInputSchema,
  UnlockInputSchema,
  LimitsInputSchema,
  type AgentList,
  type AgentState,
  type ApprovalList,
  type AgentStatus,
  type HaltInput,
  type LimitsInput,
  type LimitsResult,
  type MessageResult,
  type SubmitTaskInput,
  type SubmitTaskResult,
  type TaskResult,
  type UnlockInput,
  type UnlockResult,
  type StreamEvent,
} from '../core/contract';
import {
  InvalidArgumentError,
  isRequestError,
  NotFoundError,
  PermissionDeniedError,
  RefusedError,
  requestErrorType,
  type RequestError,
} from '../core/errors';
import {
  agentOfTaskWorkflowId,
  AgentRefSchema,
  checkTenant,
  qualifiedAgentId,
  splitAgentRef,
  tenantOfWorkflowId,
} from '../core/tenant';
import {
  TASK_FAILED,
  agentStateQuery,
  agentWorkflowId,
  decideApprovalUpdate,
  haltSignal,
  limitsUpdate,
  messageUpdate,
  submitTaskUpdate,
  taskEndedSignal,
  taskProgressQuery,
  taskWorkflowId,
  unlockUpdate,
  type TaskProgress,
} from '../workflows/messages';
import {
  AgentIdKey,
  AgentStateKey,
  LockReasonKey,
  startAttributes,
  TenantKey,
  TokensUsedKey,
} from '../workflows/search-attributes';
import { newAgentData, reportedOf } from '../core/agent-entity';
import { QUEUE_PRIORITY } from '../core/priority-inbox';
import type { agentWorkflow, taskWorkflow } from '../workflows';
import type { TaskRunOutput } from '../workflows/task';
import { BudgetClient } from './budget-client';
import { hasLiveWorkerOn } from './connection';
import { openAgentStream, openTaskStream, type StreamOptions } from './event-stream';
import { runEvents } from './history';

export { InvalidArgumentError, NotFoundError, RefusedError };

/**
 * No worker took a submit: none polls the agent's task queue, or none took the submit within the
 * client's `acceptTimeoutMs`. Nothing was submitted and nothing of it runs later (its agent refuses it
 * past its `acceptBy`): submit again once a worker runs; with an idempotency key or a task id, a submit
 * sent again runs at most once. The HTTP API answers it 503 with `Retry-After`.
 *
 * ```ts
 * try { await agents.submit('a1', { goal, config }); } catch (e) { if (e instanceof NoWorkerError) setTimeout(retry, e.retryAfterSeconds * 1000); }
 * ```
 */
export class NoWorkerError extends Error {
  /** When to try again. */
  readonly retryAfterSeconds = 5;
  constructor(
    readonly taskQueue: string,
    message: string,
  ) {
    super(message);
    this.name = 'NoWorkerError';
  }
}

/**
 * A task to submit: its config parsed at the edge and sent once, to the agent. `parseTaskConfig` keeps
 * of `safety` only the limits the config gives, so the others are the agent's; a whole `AgentConfig`
 * (`parseAgentConfig`) gives every limit, which must not be looser than an existing agent's.
 */
export interface SubmitInput {
  goal: string;
  config: TaskConfig;
  /** 1 (first) .. 9; default 5. */
  priority?: number;
  /** The task's id (default `task-<n>`). A submit sent again with the same id is answered as the first was. */
  taskId?: string;
  /**
   * A submit sent again with the same key is answered as the first was and runs at most once (the HTTP API's
   * `Idempotency-Key`).
   */
  idempotencyKey?: string;
  /**
   * The caller's W3C trace context (`00-<trace id>-<span id>-<flags>`): when the worker traces, the task's
   * trace links to that span (docs/OBSERVABILITY.md).
   */
  traceparent?: string;
}

export interface AgentClientOptions {
  connection: Connection;
  namespace?: string;
  taskQueue: string;
  /** Tests force continue-as-new with a small number. */
  continueAsNewAfterEvents?: number;
  /**
   * Act for this tenant only: agent ids are the tenant's own (`x` is `<tenant>:x` inside), results name
   * them so, lists hold only its agents, and another tenant's task is unknown. Without it, every agent
   * and task, by its full id (`x`, or `acme:x` for tenant acme's).
   */
  tenant?: string;
  /**
   * How long a submit waits for a worker to take it (default 20 s) when one polled the task queue
   * lately, before it fails with NoWorkerError; with none polling it fails within seconds.
   */
  acceptTimeoutMs?: number;
}

/** A submit's wait for a worker (`acceptTimeoutMs`), by default. */
const ACCEPT_TIMEOUT_MS = 20_000;
/** Added to a submit's `acceptBy` for the difference between this host's clock and the server's. */
const CLOCK_MARGIN_MS = 2_000;
/** How long a worker seen polling counts as there, so a burst of submits asks the server once. */
const WORKER_SEEN_MS = 10_000;
/** How long a submit looks for a worker that is just starting (its first poll on its way). */
const WORKER_GRACE_MS = 3_000;
/** When a worker was last seen polling a task queue, per Temporal client: shared by `forTenant`'s clients. */
const workerSeen = new WeakMap<Client, Map<string, number>>();

export class AgentClient {
  readonly client: Client;
  /** The tenant this client acts for; undefined: any agent, by its full id. */
  readonly tenant: string | undefined;

  /**
   * ```ts
   * const agents = new AgentClient({ connection, taskQueue: 'openstarry', tenant: 'acme' });
   * ```
   * @throws InvalidArgumentError for a tenant id that is not one (core/tenant.ts).
   */
  constructor(
    private readonly opts: AgentClientOptions,
    /** @internal The Temporal client of the client this one is scoped from (`forTenant`). */
    client?: Client,
  ) {
    this.tenant = opts.tenant === undefined ? undefined : checkTenant(opts.tenant, 'tenant');
    this.client = client ?? new Client({ connection: opts.connection, namespace: opts.namespace ?? 'default' });
  }

  /**
   * This client acting for `tenant` (the same connection); `undefined` acts for none in particular.
   *
   * ```ts
   * const acme = agents.forTenant('acme');
   * await acme.status('x'); // the agent acme:x, shown as x
   * ```
   */
  forTenant(tenant: string | undefined): AgentClient {
    return tenant === this.tenant ? this : new AgentClient({ ...this.opts, tenant }, this.client);
  }

  /**
   * The shared budgets of this client's tenant (client/budget-client.ts).
   *
   * ```ts
   * await agents.budgets().create({ name: 'team-a', tokens: 1_000_000, by: 'alice' });
   * ```
   */
  budgets(): BudgetClient {
    return new BudgetClient(this.client, this.opts.taskQueue, this.tenant);
  }

  /** The workflow id of the agent `agentId` names for this client (`agent-acme:x` for tenant acme's `x`). */
  agentWorkflowId(agentId: string): string {
    return agentWorkflowId(this.fullId(agentId));
  }

  /**
   * Submit a task, starting the agent workflow if it is not running. The config, parsed at the edge,
   * goes once, in the submit: a new agent takes its first task's config as its own. A submit refused to
   * a new agent leaves no agent behind.
   *
   * ```ts
   * const config = parseTaskConfig({ workspace: ['/srv/ws'] }, 'gemini:gemini-2.5-flash');
   * const { taskId } = await agents.submit('a1', { goal: 'Summarise notes.md', config });
   * ```
   * @throws InvalidArgumentError, RefusedError (the agent's refusal), PermissionDeniedError (the config
   *   loosens the agent's limits), NoWorkerError (no worker took it).
   */
  async submit(agentId: string, input: SubmitInput): Promise<SubmitTaskResult> {
    const fullId = this.fullId(agentId);
    const tenant = splitAgentRef(fullId).tenant;
    const start = () =>
      new WithStartWorkflowOperation<typeof agentWorkflow>('agentWorkflow', {
        workflowId: agentWorkflowId(fullId),
        taskQueue: this.opts.taskQueue,
        args: [
          {
            agentId: fullId,
            ...(this.opts.continueAsNewAfterEvents
              ? { continueAsNewAfterEvents: this.opts.continueAsNewAfterEvents }
              : {}),
          },
        ],
        workflowIdConflictPolicy: 'USE_EXISTING',
        // Before its tasks' ticks on saturated workers; kept across continue-as-new.
        priority: { priorityKey: QUEUE_PRIORITY.agent },
        staticSummary: `agent ${fullId}`,
        // A new agent's search attributes as its first report would write them: given at the start, that
        // report upserts none, and the list shows the agent's state from its start. A tenant's agent also
        // carries its tenant, which the agent never writes: continue-as-new keeps the attributes of the
        // run before, so it stays for the agent's life.
        typedSearchAttributes: [
          ...startAttributes(reportedOf(newAgentData(fullId))),
          ...(tenant !== undefined ? [{ key: TenantKey, value: tenant }] : []),
        ],
      });
    return this.sendSubmit(
      agentWorkflowId(fullId),
      { ...submitPayload(input), config: input.config },
      submitUpdateId(input),
      start,
    );
  }

  /**
   * Submit a task to an agent that exists, with its own config (the agent's, when the task has none).
   * @throws NotFoundError when there is no such agent (then a config with an LLM is needed to start it).
   */
  async submitExisting(
    agentId: string,
    input: Omit<SubmitInput, 'config'> & { config?: TaskConfig },
  ): Promise<SubmitTaskResult> {
    const payload = submitPayload(input);
    await this.ensureExists(agentId);
    return this.sendSubmit(
      this.agentWorkflowId(agentId),
      { ...payload, ...(input.config ? { config: input.config } : {}) },
      submitUpdateId(input),
    );
  }

  /**
   * Send a submit once a worker polls, and wait for its answer. The submit carries its `acceptBy`: a
   * worker that takes it later than the client waits refuses it, so a submit given up on never runs.
   * With `start`, an agent not running is started by the submit (update-with-start).
   */
  private async sendSubmit(
    workflowId: string,
    payload: SubmitTaskInput,
    updateId: string | undefined,
    start?: () => WithStartWorkflowOperation<typeof agentWorkflow>,
  ): Promise<SubmitTaskResult> {
    await this.workerPolls();
    const waitMs = this.opts.acceptTimeoutMs ?? ACCEPT_TIMEOUT_MS;
    for (let attempt = 1; ; attempt++) {
      const acceptBy = Date.now() + waitMs + CLOCK_MARGIN_MS;
      const options = {
        args: [{ ...payload, acceptBy }] as [SubmitTaskInput],
        waitForStage: 'ACCEPTED' as const,
        ...(updateId ? { updateId } : {}),
      };
      let handle: WorkflowUpdateHandle<SubmitTaskResult>;
      try {
        handle = await this.client.connection.withDeadline(Date.now() + waitMs, () =>
          start
            ? this.client.workflow.startUpdateWithStart(submitTaskUpdate, {
                ...options,
                startWorkflowOperation: start(),
              })
            : this.client.workflow.getHandle(workflowId).startUpdate(submitTaskUpdate, options),
        );
      } catch (err) {
        if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
          await this.removeUntaken(workflowId);
          throw new NoWorkerError(
            this.opts.taskQueue,
            `no worker took the submit within ${waitMs / 1000} s, though one polled task queue ${this.opts.taskQueue} lately: ` +
              'nothing was submitted, and the agent refuses it if a worker takes it later. The workers are busy (a burst of ' +
              'submits) or stuck: submit again in a few seconds (with the same idempotency key or task id, it runs at most once)',
          );
        }
        // The agent this submit came to ended meanwhile (its first submit was refused): start it again.
        if (start && attempt < 3 && err instanceof WorkflowNotFoundError) continue;
        throw tenantNotRegistered(err) ?? err;
      }
      try {
        return await handle.result();
      } catch (err) {
        const failure = updateFailure(err, 'task refused');
        // The same update id came to the agent from an attempt given up on: that one is refused now, so this one is
        // new.
        if (attempt < 3 && isRequestError(failure) && failure.issues.includes(SUBMIT_EXPIRED) && Date.now() < acceptBy)
          continue;
        if (start && handle.workflowRunId) await this.removeEnded(workflowId, handle.workflowRunId);
        throw failure;
      }
    }
  }

  /**
   * Wait (briefly: a worker that is just starting has its first poll on the way) until a worker polls
   * the task queue. @throws NoWorkerError when none does.
   */
  private async workerPolls(): Promise<void> {
    const { taskQueue } = this.opts;
    const seen = workerSeen.get(this.client) ?? new Map<string, number>();
    workerSeen.set(this.client, seen);
    if (Date.now() - (seen.get(taskQueue) ?? 0) < WORKER_SEEN_MS) return;
    const until = Date.now() + WORKER_GRACE_MS;
    while (!(await hasLiveWorkerOn(this.client.connection, this.client.options.namespace, taskQueue))) {
      if (Date.now() > until) {
        throw new NoWorkerError(
          taskQueue,
          `no worker polls task queue ${taskQueue} (namespace ${this.client.options.namespace}): nothing was submitted. ` +
            'Start one (`starry worker`, or `starry dev` on this machine) and submit again',
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    seen.set(taskQueue, Date.now());
  }

  /**
   * After a submit no worker took: the agent's run, when no worker ever took its first workflow task,
   * holds nothing (no submit was ever accepted), so it is deleted, and the submits waiting on it with it.
   */
  private async removeUntaken(workflowId: string): Promise<void> {
    try {
      const d = await this.client.workflow.getHandle(workflowId).describe();
      if (d.status.name !== 'RUNNING' || d.historyLength > 20) return;
      for await (const e of runEvents(this.client, workflowId, d.runId, {}))
        if (e.workflowTaskCompletedEventAttributes) return;
      await this.deleteRun(workflowId, d.runId);
    } catch {
      // Nothing to remove (or no right to): the submit is refused past its acceptBy anyway.
    }
  }

  /** After a refused submit: a run that has ended is an agent whose first submit it was; it held nothing. */
  private async removeEnded(workflowId: string, runId: string): Promise<void> {
    try {
      const d = await this.client.workflow.getHandle(workflowId, runId).describe();
      if (d.status.name === 'COMPLETED') await this.deleteRun(workflowId, runId);
    } catch {
      // Already gone, or no right to delete: it is not running, so it is no agent either way.
    }
  }

  private async deleteRun(workflowId: string, runId: string): Promise<void> {
    await this.client.workflowService.deleteWorkflowExecution({
      namespace: this.client.options.namespace,
      workflowExecution: { workflowId, runId },
    });
  }

  /**
   * Running agents from the visibility store (their search attributes), optionally in one state, a
   * page at a time; a tenant's client lists its tenant's only (`Tenant = '<tenant>'`). Needs no worker.
   */
  async listAgents(opts: { state?: AgentState; pageSize?: number; nextPageToken?: string } = {}): Promise<AgentList> {
    // Both values are checked ids and states: no quote can reach the query.
    const query = [
      `WorkflowType = 'agentWorkflow'`,
      `ExecutionStatus = 'Running'`,
      ...(this.tenant !== undefined ? [`${TenantKey.name} = '${this.tenant}'`] : []),
      ...(opts.state ? [`${AgentStateKey.name} = '${opts.state}'`] : []),
    ].join(' AND ');
    const res = await this.client.workflowService.listWorkflowExecutions({
      namespace: this.client.options.namespace,
      query,
      pageSize: opts.pageSize ?? 50,
      ...(opts.nextPageToken ? { nextPageToken: Buffer.from(opts.nextPageToken, 'base64url') } : {}),
    });
    const own = `agent-${qualifiedAgentId(this.tenant, '')}`;
    // The query keeps to the tenant; its workflow ids say so again.
    const executions = (res.executions ?? []).filter(
      (e) => this.tenant === undefined || (e.execution?.workflowId ?? '').startsWith(own),
    );
    const agents = executions.map((e) => {
      const attributes = decodeTypedSearchAttributes(e.searchAttributes?.indexedFields);
      const agentState = attributes.get(AgentStateKey) as AgentState | undefined;
      const lockReason = attributes.get(LockReasonKey);
      const tokensUsed = attributes.get(TokensUsedKey);
      return {
        agentId: this.ownId(attributes.get(AgentIdKey) ?? (e.execution?.workflowId ?? '').replace(/^agent-/, '')),
        workflowId: e.execution?.workflowId ?? '',
        ...(agentState ? { agentState } : {}),
        ...(lockReason ? { lockReason } : {}),
        ...(tokensUsed !== undefined ? { tokensUsed } : {}),
      };
    });
    const token = res.nextPageToken?.length ? Buffer.from(res.nextPageToken).toString('base64url') : undefined;
    return { agents, ...(token ? { nextPageToken: token } : {}) };
  }

  /**
   * Submit a task that a halt cancelled before it started, again, under its own id, with its goal,
   * priority and config as they were. Refused like any submit while the agent is locked.
   */
  async resubmit(agentId: string, taskId: string): Promise<SubmitTaskResult> {
    const s = await this.agentState(agentId);
    const cancelled = s.cancelledTasks.find((t) => t.taskId === taskId);
    if (!cancelled) {
      const known = s.cancelledTasks.map((t) => t.taskId);
      throw new NotFoundError(
        `agent ${agentId} has no cancelled task ${taskId}` +
          (known.length ? `: its cancelled tasks are ${known.join(', ')}` : ': a halt cancelled none of its tasks'),
      );
    }
    const payload = {
      goal: cancelled.goal,
      priority: cancelled.priority,
      taskId,
      ...(cancelled.config !== undefined ? { config: cancelled.config as TaskConfig } : {}),
    };
    // Its own update id, not the task id's: the task was submitted under that one before.
    return this.sendSubmit(this.agentWorkflowId(agentId), payload, undefined);
  }

  /**
   * The agent's `state` query; a clear error when there is no such agent. A workflow that completed is
   * none: an agent completes only when its first submit was refused, holding nothing.
   */
  async status(agentId: string): Promise<AgentStatus> {
    const described = this.client.workflow
      .getHandle(this.agentWorkflowId(agentId))
      .describe()
      .catch(() => undefined);
    const [own, d] = await Promise.all([this.agentState(agentId), described]);
    if (d?.status.name === 'COMPLETED')
      throw this.noAgent(agentId, 'its first submit was refused, so it ended holding nothing');
    const s = await this.withLiveTask(own);
    return this.tenant === undefined
      ? s
      : { ...s, agentId: this.ownId(s.agentId), tasks: s.tasks.map((t) => this.ownResult(t)) };
  }

  /** The agent's own `state` query, without the running task's live counts (what waiting needs). */
  private async agentState(agentId: string): Promise<AgentStatus> {
    const workflowId = this.agentWorkflowId(agentId);
    try {
      return await this.client.workflow.getHandle(workflowId).query(agentStateQuery);
    } catch (err) {
      throw this.unknownAgent(err, agentId);
    }
  }

  /**
   * The agent's state with its running task's live counts: the agent hears of them every few ticks,
   * the task knows them now (its `progress` query). A task that cannot answer (it just ended, its
   * worker is busy) leaves the agent's own view.
   */
  private async withLiveTask(s: AgentStatus): Promise<AgentStatus> {
    const current = s.currentTask;
    if (!current) return s;
    let live: TaskProgress;
    try {
      live = await this.client.workflow.getHandle(current.workflowId).query(taskProgressQuery);
    } catch {
      return s;
    }
    if (live.taskId !== current.taskId || live.tick < current.tick) return s;
    const known = current.runTokens ?? 0;
    return {
      ...s,
      tokensUsed: s.tokensUsed - known + live.runTokens,
      counters: live.counters,
      currentTask: {
        ...current,
        tick: live.tick,
        runTokens: live.runTokens,
        ...(live.traceId ? { traceId: live.traceId } : {}),
      },
    };
  }

  /**
   * What the visibility store says of an agent (its search attributes), which needs no worker: for a
   * status when none is polling. @throws NotFoundError for an unknown agent.
   */
  async visibleState(agentId: string): Promise<{ agentState?: string; lockReason?: string; tokensUsed?: number }> {
    const workflowId = this.agentWorkflowId(agentId);
    try {
      const d = await this.client.workflow.getHandle(workflowId).describe();
      const sa = d.typedSearchAttributes;
      const agentState = sa.get(AgentStateKey);
      const lockReason = sa.get(LockReasonKey);
      const tokensUsed = sa.get(TokensUsedKey);
      return {
        ...(agentState ? { agentState } : {}),
        ...(lockReason ? { lockReason } : {}),
        ...(tokensUsed !== undefined ? { tokensUsed } : {}),
      };
    } catch (err) {
      throw this.unknownAgent(err, agentId);
    }
  }

  /**
   * Wait until a task has a result (any outcome, SUSPENDED included) or was cancelled from the queue.
   */
  async waitForTask(
    agentId: string,
    taskId: string,
    opts: { pollMs?: number; timeoutMs?: number; after?: (r: TaskResult) => boolean } = {},
  ): Promise<TaskResult> {
    const deadline = Date.now() + (opts.timeoutMs ?? 30 * 60_000);
    const accept = opts.after ?? (() => true);
    const workflowId = taskWorkflowId(this.fullId(agentId), taskId);
    const late = () => new Error(`task ${taskId} of agent ${agentId} did not finish in time`);
    const pause = () => new Promise((r) => setTimeout(r, opts.pollMs ?? 100));
    for (;;) {
      // While the task runs, wait for its workflow to close on the server (a long poll the worker never
      // sees), and ask the agent only then: with many agents, queries are what would keep a worker busy
      // (a query every 10 s of a long task cost the server and the worker a third of a query a tick at
      // 200 agents). A task still queued has no workflow yet: the poll returns at once and the agent
      // is asked.
      let run: 'open' | 'closed' | 'missing';
      while ((run = await this.closedWithin(workflowId, Math.min(10_000, deadline - Date.now()))) === 'open') {
        if (Date.now() > deadline) throw late();
      }
      // Closed: the agent records the result in its next workflow task, so ask a moment later.
      if (run === 'closed') await pause();
      const s = await this.statusWhileBusy(agentId);
      if (s) {
        const result = s.tasks.find((t) => t.taskId === taskId);
        if (result && accept(result) && s.currentTask?.taskId !== taskId)
          return (await this.fullResult(result)) ?? this.ownResult(result);
        const cancelled = s.cancelledTasks.find((t) => t.taskId === taskId);
        if (cancelled) {
          return {
            agentId,
            taskId,
            workflowId,
            outcome: 'CANCELLED',
            agentState: s.agentState,
            reason: s.reason ?? { code: 'SYSTEM_HALT', message: cancelled.reason },
            ticks: 0,
            tokensUsed: 0,
            toolCalls: [],
            injections: [],
          };
        }
      }
      if (Date.now() > deadline) throw late();
      // A moment for a queued task to start (a closed one waits at the top of the next round).
      if (run === 'missing') await pause();
    }
  }

  /** The agent's status, or undefined when its worker is too busy to answer a query in time (ask again). */
  private async statusWhileBusy(agentId: string): Promise<AgentStatus | undefined> {
    try {
      return await this.agentState(agentId);
    } catch (err) {
      if (isQueryTimeout(err)) return undefined;
      throw err;
    }
  }

  /**
   * Wait up to `ms` for the workflow's latest run to close: `closed`, `open` when the time ran out, or
   * `missing` when there is no such workflow yet (a queued task) or the server could not say.
   */
  private async closedWithin(workflowId: string, ms: number): Promise<'closed' | 'open' | 'missing'> {
    const { connection, options } = this.client;
    try {
      const res = await connection.withDeadline(Date.now() + Math.max(ms, 100), () =>
        connection.workflowService.getWorkflowExecutionHistory({
          namespace: options.namespace,
          execution: { workflowId },
          waitNewEvent: true,
          historyEventFilterType: temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
          skipArchival: true,
        }),
      );
      return res.history?.events?.length ? 'closed' : 'open';
    } catch (err) {
      if ((err as { code?: number }).code === grpcStatus.DEADLINE_EXCEEDED) return 'open';
      // Not there (yet), or anything else: the status query decides.
      return 'missing';
    }
  }

  /**
   * A task's result as its own workflow returned it, so tool arguments and answers are whole (the agent
   * keeps a compact copy). The agent's record has the last word on outcome and state (an unlock without
   * resume turns a SUSPENDED task ABORTED). Undefined when the task workflow is running or gone.
   */
  async fullResult(record: TaskResult): Promise<TaskResult | undefined> {
    const full = await this.taskResult(record.workflowId).catch(() => undefined);
    if (full?.taskId !== record.taskId) return undefined;
    return {
      ...full,
      outcome: record.outcome,
      agentState: record.agentState,
      ...(record.reason ? { reason: record.reason } : {}),
    };
  }

  /**
   * The result a task workflow returned (a FAILED task's too; a halted task's, CANCELLED, from the
   * output it sent its agent before it ended), or undefined while it runs. A task that ended with no
   * result of its own (terminated, timed out) has the one its agent recorded.
   * @throws NotFoundError when there is no such workflow (for a tenant's client: none of its tenant's),
   *   or no result is left of it.
   */
  async taskResult(workflowId: string): Promise<TaskResult | undefined> {
    // Another tenant's task is unknown here, in the same words as a missing one.
    if (this.tenant !== undefined && tenantOfWorkflowId(workflowId) !== this.tenant) throw noTaskWorkflow(workflowId);
    const handle = this.client.workflow.getHandle<typeof taskWorkflow>(workflowId);
    let status: string;
    try {
      const d = await handle.describe();
      status = d.status.name;
      if (status === 'RUNNING') return undefined;
      if (status === 'CANCELLED') {
        const ended = await this.endedOutput(workflowId, d.runId);
        if (ended) return this.ownResult(ended.result);
      } else if (status === 'COMPLETED' || status === 'FAILED') {
        return this.ownResult((await handle.result()).result);
      }
    } catch (err) {
      if (
        err instanceof WorkflowFailedError &&
        err.cause instanceof ApplicationFailure &&
        err.cause.type === TASK_FAILED
      ) {
        const out = err.cause.details?.[0] as TaskRunOutput | undefined;
        return out && this.ownResult(out.result);
      }
      if (err instanceof WorkflowNotFoundError) throw noTaskWorkflow(workflowId, err);
      throw err;
    }
    const recorded = await this.recordedResult(workflowId);
    if (recorded) return recorded;
    throw new NotFoundError(
      `task workflow ${workflowId} ended ${status} with no result of its own, and its agent has no record of it ` +
        '(or no worker answered): its history is in the Web UI',
    );
  }

  /**
   * The output a halted task sent its agent just before it ended CANCELED (workflows/task.ts): the
   * `taskEnded` signal's payload, in the task's own history, so no worker is needed to read it. Among
   * the run's last events, so the history is read from its end.
   */
  private async endedOutput(workflowId: string, runId: string): Promise<TaskRunOutput | undefined> {
    const { workflowService, options } = this.client;
    let nextPageToken: Uint8Array | undefined;
    do {
      const res = await workflowService.getWorkflowExecutionHistoryReverse({
        namespace: options.namespace,
        execution: { workflowId, runId },
        // A batch at a time: the last few hold it, and each stays under gRPC's message limit whatever the task wrote.
        maximumPageSize: 1,
        ...(nextPageToken?.length ? { nextPageToken } : {}),
      });
      for (const e of res.history?.events ?? []) {
        const sent = e.signalExternalWorkflowExecutionInitiatedEventAttributes;
        const payload = sent?.signalName === taskEndedSignal.name ? sent?.input?.payloads?.[0] : undefined;
        if (!payload) continue;
        const parsed = TaskEndedSchema.safeParse(defaultPayloadConverter.fromPayload<unknown>(payload));
        return parsed.success ? (parsed.data as TaskRunOutput) : undefined;
      }
      nextPageToken = res.nextPageToken ?? undefined;
    } while (nextPageToken?.length);
    return undefined;
  }

  /** The result the task's agent recorded for it (among its latest), or undefined (gone, or no worker answers). */
  private async recordedResult(workflowId: string): Promise<TaskResult | undefined> {
    const agent = agentOfTaskWorkflowId(workflowId);
    if (!agent) return undefined;
    try {
      const s = await this.client.workflow.getHandle(agentWorkflowId(agent)).query(agentStateQuery);
      const record = s.tasks.find((t) => t.workflowId === workflowId);
      return record && this.ownResult(record);
    } catch {
      return undefined;
    }
  }

  async halt(agentId: string, input: HaltInput = {}): Promise<void> {
    const payload = parsePayload(HaltInputSchema, input, 'halt');
    const workflowId = this.agentWorkflowId(agentId);
    // The agent is raised above every other agent first, so the workflow task that takes the signal goes
    // before theirs on saturated workers. The signal does not wait for the read: a signal to an agent
    // that is gone or not running fails on its own, and then the read's error says which.
    const [exists, sent] = await Promise.allSettled([
      this.ensureExists(agentId),
      this.setPriority(workflowId, QUEUE_PRIORITY.halt)
        .catch(() => undefined)
        .then(() => this.client.workflow.getHandle(workflowId).signal(haltSignal, payload)),
    ]);
    if (exists.status === 'rejected') throw exists.reason;
    if (sent.status === 'rejected') throw this.unknownAgent(sent.reason, agentId);
    // The agent cancels its running task: the task's workflow task that cancels the call in flight goes
    // first too. Best effort: the halt is sent, and a task that just ended has nothing to raise.
    await Promise.all(exists.value.map((child) => this.setPriority(child, QUEUE_PRIORITY.halt).catch(() => undefined)));
  }

  /** A running workflow's task-queue priority (`QUEUE_PRIORITY`), from now on and across continue-as-new. */
  private async setPriority(workflowId: string, priorityKey: number): Promise<void> {
    const { connection, options } = this.client;
    await connection.workflowService.updateWorkflowExecutionOptions({
      namespace: options.namespace,
      workflowExecution: { workflowId },
      workflowExecutionOptions: { priority: { priorityKey } },
      updateMask: { paths: ['priority'] },
      identity: options.identity,
    });
  }

  async unlock(agentId: string, input: UnlockInput = {}): Promise<UnlockResult> {
    const payload = parsePayload(UnlockInputSchema, input, 'unlock');
    const result = await this.humanUpdate(agentId, unlockUpdate, payload, 'unlock refused');
    // Back among the other agents, from the halt's priority. Best effort: the unlock is done.
    await this.setPriority(this.agentWorkflowId(agentId), QUEUE_PRIORITY.agent).catch(() => undefined);
    return result;
  }

  /**
   * The tool calls that wait for a human: one agent's, or those of every agent (of this client's
   * tenant) in WAITING_FOR_APPROVAL, oldest first. The list of agents comes from the visibility
   * store, which may lag a second behind an agent that just started waiting.
   */
  async approvals(agentId?: string): Promise<ApprovalList> {
    let ids: string[];
    if (agentId !== undefined) {
      ids = [agentId];
    } else {
      ids = [];
      let token: string | undefined;
      do {
        const page = await this.listAgents({
          state: 'WAITING_FOR_APPROVAL',
          pageSize: 200,
          ...(token ? { nextPageToken: token } : {}),
        });
        ids.push(...page.agents.map((a) => a.agentId));
        token = page.nextPageToken;
      } while (token && ids.length < 1000);
    }
    const statuses = await Promise.all(
      ids.map((id) => this.agentState(id).catch((err) => (agentId === undefined ? undefined : Promise.reject(err)))),
    );
    const approvals = statuses
      .flatMap((s) => (s?.approvals ?? []).map((p) => ({ ...p, agentId: this.ownId(s!.agentId) })))
      .sort((a, b) => a.askedAt.localeCompare(b.askedAt));
    return { approvals };
  }

  /**
   * Decide a call that waits for approval: approve it (with `args`, it runs with those instead of the
   * model's) or deny it (its `reason` reaches the model as pain).
   * @throws NotFoundError (no such call waits), RefusedError (decided already), InvalidArgumentError (bad args).
   */
  async decide(
    agentId: string,
    input: {
      callId: string;
      decision: 'approve' | 'deny';
      reason?: string;
      note?: string;
      args?: Record<string, unknown>;
      by?: string;
    },
  ): Promise<ApprovalDecision> {
    const payload = parsePayload(DecisionInputSchema, input, 'decision');
    return this.humanUpdate(agentId, decideApprovalUpdate, payload, 'decision refused');
  }

  /**
   * `admin:limits`: set some of an agent's limits (its `safety` fields), raising or lowering them; the
   * agent records who did it. An admin's act: the HTTP API allows it to the admin role only.
   *
   * ```ts
   * await agents.setLimits('a1', { safety: { tokenBudget: 50_000 }, by: 'alice', note: 'for the migration' });
   * ```
   * @throws InvalidArgumentError (a bad field or value), RefusedError (the agent has no config yet), NotFoundError.
   */
  async setLimits(agentId: string, input: LimitsInput): Promise<LimitsResult> {
    const payload = parsePayload(LimitsInputSchema, input, 'limits');
    return this.humanUpdate(agentId, limitsUpdate, payload, 'limits refused');
  }

  /** A human message: to the running task, or kept for the next one. Refused when too many are waiting. */
  async message(agentId: string, text: string, by?: string): Promise<MessageResult> {
    const payload = parsePayload(HumanMessageSchema, { text, ...(by ? { by } : {}) }, 'message');
    return this.humanUpdate(agentId, messageUpdate, payload, 'message refused');
  }

  /** A human's update to a running agent; its refusal as the family's error, prefixed with `refused`. */
  private async humanUpdate<Ret, Arg>(
    agentId: string,
    update: UpdateDefinition<Ret, [Arg]>,
    payload: Arg,
    refused: string,
  ): Promise<Ret> {
    await this.ensureExists(agentId);
    try {
      return await this.client.workflow
        .getHandle(this.agentWorkflowId(agentId))
        .executeUpdate(update, { args: [payload] });
    } catch (err) {
      throw updateFailure(err, refused);
    }
  }

  /** @returns the workflow ids of the agent's running tasks (its pending children), as the server has them. */
  private async ensureExists(agentId: string): Promise<string[]> {
    const workflowId = this.agentWorkflowId(agentId);
    try {
      const d = await this.client.workflow.getHandle(workflowId).describe();
      if (d.status.name !== 'RUNNING')
        throw new NotFoundError(`agent ${agentId} is not running (its workflow is ${d.status.name})`);
      return (d.raw.pendingChildren ?? []).flatMap((c) => (c.workflowId ? [c.workflowId] : []));
    } catch (err) {
      throw this.unknownAgent(err, agentId);
    }
  }

  /**
   * A task's live events, for `GET /v1/tasks/{workflowId}/events` (client/event-stream.ts): from `now`
   * (default), from its start (`from: 'start'`), or after an id the stream sent (`lastEventId`).
   *
   * ```ts
   * for await (const e of await agents.taskEvents('agent-a1-task-1', { from: 'start' })) console.log(e.event);
   * ```
   * @throws NotFoundError for an unknown task (another tenant's too); BadEventIdError for a bad `lastEventId`.
   */
  async taskEvents(workflowId: string, opts: StreamOptions = {}): Promise<AsyncGenerator<StreamEvent>> {
    if (this.tenant !== undefined && tenantOfWorkflowId(workflowId) !== this.tenant) throw noTaskWorkflow(workflowId);
    try {
      return this.ownEvents(await openTaskStream(this.client, workflowId, opts));
    } catch (err) {
      if (isNotFoundStatus(err)) throw noTaskWorkflow(workflowId, err);
      throw err;
    }
  }

  /**
   * An agent's live events, and those of each task it runs, for `GET /v1/agents/{agentId}/events`: from
   * `now` (default), from the start of its current run (`from: 'start'`), or after an id the stream sent.
   *
   * @throws NotFoundError for an unknown agent; BadEventIdError for a bad `lastEventId`.
   */
  async agentEvents(agentId: string, opts: StreamOptions = {}): Promise<AsyncGenerator<StreamEvent>> {
    const workflowId = this.agentWorkflowId(agentId);
    try {
      return this.ownEvents(await openAgentStream(this.client, workflowId, opts));
    } catch (err) {
      throw this.unknownAgent(err, agentId);
    }
  }

  /** A tenant's events name its agents by their own ids, as its other answers do. */
  private async *ownEvents(events: AsyncGenerator<StreamEvent>): AsyncGenerator<StreamEvent> {
    if (this.tenant === undefined) return yield* events;
    for await (const e of events) {
      if (e.event === 'end' && e.data.result)
        yield { ...e, data: { ...e.data, result: this.ownResult(e.data.result) } };
      else if (e.event === 'approval' && e.data.agentId)
        yield { ...e, data: { ...e.data, agentId: this.ownId(e.data.agentId) } };
      else yield e;
    }
  }

  private unknownAgent(err: unknown, agentId: string): Error {
    if (isNotFoundStatus(err)) return this.noAgent(agentId, `no workflow ${this.agentWorkflowId(agentId)}`);
    return err as Error;
  }

  private noAgent(agentId: string, why: string): NotFoundError {
    const t = this.tenant;
    return new NotFoundError(
      `unknown agent "${agentId}"${t !== undefined ? ` (tenant ${t})` : ''}: ${why}. ` +
        `Start one with \`starry run --agent ${agentId}${t !== undefined ? ` --tenant ${t}` : ''} …\``,
    );
  }

  /**
   * An agent's full id, checked at the edge so a bad one is a clear error and never a workflow id: for a
   * tenant's client, the tenant's agent of that id (a plain id); otherwise the id as given, plain or a
   * tenant's (`acme:x`).
   */
  private fullId(agentId: string): string {
    if (this.tenant === undefined) return parsePayload(AgentRefSchema, agentId, 'agent id');
    return qualifiedAgentId(this.tenant, parsePayload(AgentIdSchema, agentId, 'agent id'));
  }

  /** An agent's full id as this client names it: without its tenant's prefix for a tenant's client. */
  private ownId(fullId: string): string {
    const prefix = qualifiedAgentId(this.tenant, '');
    return this.tenant !== undefined && fullId.startsWith(prefix) ? fullId.slice(prefix.length) : fullId;
  }

  private ownResult(r: TaskResult): TaskResult {
    return this.tenant === undefined ? r : { ...r, agentId: this.ownId(r.agentId) };
  }
}

/** A submit's task fields, checked here (the client is an edge): the config is typed, parsed by its caller. */
function submitPayload(input: {
  goal: string;
  priority?: number;
  taskId?: string;
  idempotencyKey?: string;
  traceparent?: string;
}): SubmitTaskInput {
  if (input.idempotencyKey !== undefined) parsePayload(IdempotencyKeySchema, input.idempotencyKey, 'idempotency key');
  const { goal, priority, taskId, traceparent } = input;
  return parsePayload(
    SubmitTaskInputSchema,
    {
      goal,
      ...(priority !== undefined ? { priority } : {}),
      ...(taskId !== undefined ? { taskId } : {}),
      ...(traceparent !== undefined ? { traceparent } : {}),
    },
    'task',
  ) as SubmitTaskInput;
}

/**
 * The update id of a submit sent again: from its idempotency key, else its task id. The server answers
 * an update id it has seen with that update's outcome, and the agent remembers the ids it accepted
 * across continue-as-new (`AgentEntity.answered`): the same submit runs at most once.
 */
function submitUpdateId(input: { idempotencyKey?: string; taskId?: string }): string | undefined {
  if (input.idempotencyKey !== undefined) return `submit-key:${input.idempotencyKey}`;
  if (input.taskId !== undefined) return `submit-task:${input.taskId}`;
  return undefined;
}

/** The same answer for a task workflow that does not exist and one of another tenant. */
function noTaskWorkflow(workflowId: string, cause?: unknown): NotFoundError {
  return new NotFoundError(
    `no task workflow ${workflowId}: task workflow ids look like agent-<agentId>-task-<n> (see \`starry status <agent>\`)`,
    cause !== undefined ? { cause } : undefined,
  );
}

/**
 * A tenant's agent started on a namespace without the `Tenant` search attribute: the server refuses the
 * start (INVALID_ARGUMENT). Undefined for any other error.
 */
function tenantNotRegistered(err: unknown): Error | undefined {
  for (let e: unknown = err, i = 0; e && i < 5; i++, e = (e as { cause?: unknown }).cause) {
    if (/search attribute Tenant is not defined/i.test((e as Error).message ?? '')) {
      return new Error(
        "this namespace has no Tenant search attribute, which a tenant's agent carries: register it (Keyword) once, " +
          'as docs/DEPLOY.md step 1 shows, or with ensureSearchAttributes',
        { cause: err },
      );
    }
  }
  return undefined;
}

/**
 * A failed update as the family's error: the workflow's validators fail with an ApplicationFailure
 * whose type is `InvalidArgument`, `NotFound`, `Refused` or `PermissionDenied` (core/errors/request.ts); anything else is passed on.
 */
export function updateFailure(err: unknown, what: string): unknown {
  if (!(err instanceof WorkflowUpdateFailedError)) return err;
  const cause = err.cause;
  const type = cause instanceof ApplicationFailure ? requestErrorType(cause.type) : undefined;
  const message = `${what}: ${causeMessage(err)}`;
  const issues =
    (type ? ((cause as ApplicationFailure).details?.[0] as { issues?: string[] } | undefined)?.issues : undefined) ??
    [];
  if (type === 'InvalidArgument') return new InvalidArgumentError(message, { cause: err, issues });
  if (type === 'NotFound') return new NotFoundError(message, { cause: err });
  if (type === 'PermissionDenied') return new PermissionDeniedError(message, { cause: err, issues });
  return new RefusedError(message, { cause: err, issues }) as RequestError;
}

function causeMessage(err: Error): string {
  let e: unknown = err;
  while ((e as Error).cause) e = (e as Error).cause;
  return (e as Error).message;
}

/** gRPC's DEADLINE_EXCEEDED. */
const grpcStatus = { DEADLINE_EXCEEDED: 4 } as const;

/** A query that no worker answered in time (busy or absent): the server's DEADLINE_EXCEEDED, wrapped. */
function isQueryTimeout(err: unknown): boolean {
  const cause = (err as { cause?: { code?: number } }).cause;
  return (
    (err as { code?: number }).code === grpcStatus.DEADLINE_EXCEEDED || cause?.code === grpcStatus.DEADLINE_EXCEEDED
  );
}

/** The service's NOT_FOUND, from a raw workflowService call (gRPC status 5) or the SDK's wrapper. */
function isNotFoundStatus(err: unknown): boolean {
  return (
    err instanceof WorkflowNotFoundError ||
    (err as { name?: string }).name === 'WorkflowNotFoundError' ||
    (err as { code?: unknown }).code === 5
  );
}
