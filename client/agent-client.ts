/**
 * The client side of the public contract: submit a task (update-with-start of the agent), wait for its
 * result, read state, halt, unlock, message. The CLI, the HTTP API and the tests all use this. A client
 * for a tenant (`forTenant`, `tenant` option) acts only on that tenant's agents and tasks, naming its
 * agents by their own ids (core/tenant.ts).
 *
 * AgentClient is the one class callers use; what each method does lives in a module of its concern, over
 * the client's scope (client/agent-scope.ts): submitting (submit.ts), a human's acts (control.ts),
 * reading agents and events (reads.ts), task results (task-results.ts) and approvals (approvals.ts).
 */
import { Client, type Connection } from '@temporalio/client';
import type { ApprovalDecision } from '../core/approval';
import type { TaskConfig } from '../core/config';
import type {
  AgentList,
  AgentState,
  AgentStatus,
  ApprovalList,
  HaltInput,
  LimitsInput,
  LimitsResult,
  MessageResult,
  StreamEvent,
  SubmitTaskResult,
  TaskResult,
  UnlockInput,
  UnlockResult,
} from '../core/contract';
import { InvalidArgumentError, NotFoundError, RefusedError } from '../core/errors';
import { checkTenant } from '../core/tenant';
import { agentWorkflowIdOf, type AgentScope } from './agent-scope';
import * as approvals from './approvals';
import type { DecideInput } from './approvals';
import { BudgetClient } from './budget-client';
import * as control from './control';
import type { StreamOptions } from './event-stream';
import * as reads from './reads';
import * as submits from './submit';
import type { SubmitInput } from './submit';
import * as results from './task-results';

export { InvalidArgumentError, NotFoundError, RefusedError };
export { NoWorkerError, type SubmitInput } from './submit';
export { SearchAttributesMissingError } from './failures';
export type { DecideInput } from './approvals';
export { updateFailure } from './failures';

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

export class AgentClient {
  readonly client: Client;
  /** The tenant this client acts for; undefined: any agent, by its full id. */
  readonly tenant: string | undefined;
  /** What the modules of its concerns act with. */
  private readonly scope: AgentScope;

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
    this.scope = {
      client: this.client,
      tenant: this.tenant,
      taskQueue: opts.taskQueue,
      ...(opts.continueAsNewAfterEvents !== undefined
        ? { continueAsNewAfterEvents: opts.continueAsNewAfterEvents }
        : {}),
      ...(opts.acceptTimeoutMs !== undefined ? { acceptTimeoutMs: opts.acceptTimeoutMs } : {}),
    };
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
    return agentWorkflowIdOf(this.scope, agentId);
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
    return submits.submit(this.scope, agentId, input);
  }

  /**
   * Submit a task to an agent that exists, with its own config (the agent's, when the task has none).
   * @throws NotFoundError when there is no such agent (then a config with an LLM is needed to start it).
   */
  async submitExisting(
    agentId: string,
    input: Omit<SubmitInput, 'config'> & { config?: TaskConfig },
  ): Promise<SubmitTaskResult> {
    return submits.submitExisting(this.scope, agentId, input);
  }

  /**
   * Running agents from the visibility store (their search attributes), optionally in one state, a
   * page at a time; a tenant's client lists its tenant's only (`Tenant = '<tenant>'`). Needs no worker.
   */
  async listAgents(opts: { state?: AgentState; pageSize?: number; nextPageToken?: string } = {}): Promise<AgentList> {
    return reads.listAgents(this.scope, opts);
  }

  /**
   * The agent's tasks (id, workflow id, status, start) from the visibility store, oldest first, at most
   * `limit` of the latest; needs no worker. Empty for an agent without tasks, or no such agent.
   */
  async listTasks(agentId: string, limit?: number): Promise<reads.TaskListing[]> {
    return reads.listTasks(this.scope, agentId, limit);
  }

  /**
   * Submit a task that a halt cancelled before it started, again, under its own id, with its goal,
   * priority and config as they were. Refused like any submit while the agent is locked.
   */
  async resubmit(agentId: string, taskId: string): Promise<SubmitTaskResult> {
    return submits.resubmit(this.scope, agentId, taskId);
  }

  /**
   * The agent's `state` query; a clear error when there is no such agent. A workflow that completed is
   * none: an agent completes only when its first submit was refused, holding nothing.
   */
  async status(agentId: string): Promise<AgentStatus> {
    return reads.status(this.scope, agentId);
  }

  /**
   * What the visibility store says of an agent (its search attributes), which needs no worker: for a
   * status when none is polling. @throws NotFoundError for an unknown agent.
   */
  async visibleState(agentId: string): Promise<{ agentState?: string; lockReason?: string; tokensUsed?: number }> {
    return reads.visibleState(this.scope, agentId);
  }

  /**
   * Wait until a task has a result (any outcome, SUSPENDED included) or was cancelled from the queue.
   */
  async waitForTask(
    agentId: string,
    taskId: string,
    opts: { pollMs?: number; timeoutMs?: number; after?: (r: TaskResult) => boolean } = {},
  ): Promise<TaskResult> {
    return results.waitForTask(this.scope, agentId, taskId, opts);
  }

  /**
   * A task's result as its own workflow returned it, so tool arguments and answers are whole (the agent
   * keeps a compact copy). The agent's record has the last word on outcome and state (an unlock without
   * resume turns a SUSPENDED task ABORTED). Undefined when the task workflow is running or gone.
   */
  async fullResult(record: TaskResult): Promise<TaskResult | undefined> {
    return results.fullResult(this.scope, record);
  }

  /**
   * The result a task workflow returned (a FAILED task's too; a halted task's, CANCELLED, from the
   * output it sent its agent before it ended), or undefined while it runs. A task that ended with no
   * result of its own (terminated, timed out) has the one its agent recorded.
   * @throws NotFoundError when there is no such workflow (for a tenant's client: none of its tenant's),
   *   or no result is left of it.
   */
  async taskResult(workflowId: string): Promise<TaskResult | undefined> {
    return results.taskResult(this.scope, workflowId);
  }

  async halt(agentId: string, input: HaltInput = {}): Promise<void> {
    return control.halt(this.scope, agentId, input);
  }

  async unlock(agentId: string, input: UnlockInput = {}): Promise<UnlockResult> {
    return control.unlock(this.scope, agentId, input);
  }

  /**
   * The tool calls that wait for a human: one agent's, or those of every agent (of this client's
   * tenant) in WAITING_FOR_APPROVAL, oldest first. The list of agents comes from the visibility
   * store, which may lag a second behind an agent that just started waiting.
   */
  async approvals(agentId?: string): Promise<ApprovalList> {
    return approvals.approvals(this.scope, agentId);
  }

  /**
   * Decide a call that waits for approval: approve it (with `args`, it runs with those instead of the
   * model's) or deny it (its `reason` reaches the model as pain).
   * @throws NotFoundError (no such call waits), RefusedError (decided already), InvalidArgumentError (bad args).
   */
  async decide(agentId: string, input: DecideInput): Promise<ApprovalDecision> {
    return approvals.decide(this.scope, agentId, input);
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
    return control.setLimits(this.scope, agentId, input);
  }

  /** A human message: to the running task, or kept for the next one. Refused when too many are waiting. */
  async message(agentId: string, text: string, by?: string): Promise<MessageResult> {
    return control.message(this.scope, agentId, text, by);
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
    return reads.taskEvents(this.scope, workflowId, opts);
  }

  /**
   * An agent's live events, and those of each task it runs, for `GET /v1/agents/{agentId}/events`: from
   * `now` (default), from the start of its current run (`from: 'start'`), or after an id the stream sent.
   *
   * @throws NotFoundError for an unknown agent; BadEventIdError for a bad `lastEventId`.
   */
  async agentEvents(agentId: string, opts: StreamOptions = {}): Promise<AsyncGenerator<StreamEvent>> {
    return reads.agentEvents(this.scope, agentId, opts);
  }
}
