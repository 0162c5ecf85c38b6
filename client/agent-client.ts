/**
 * The client side of the public contract: submit a task (update-with-start of the agent), wait for its
 * result, read state, halt, unlock, message. The CLI, the HTTP API and the tests all use this.
 */
import {
  Client,
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Connection,
} from '@temporalio/client';
import type { AgentConfig } from '../core/config';
import type { TaskResult } from '../core/types';
import {
  agentStateQuery,
  agentWorkflowId,
  haltSignal,
  messageSignal,
  submitTaskUpdate,
  unlockUpdate,
  type AgentStatus,
  type SubmitTaskResult,
  type UnlockInput,
  type UnlockResult,
} from '../workflows/messages';
import { AgentIdKey } from '../workflows/search-attributes';
import type { agentWorkflow } from '../workflows';

/** A refusal or a missing agent: what the user did wrong, said plainly (the CLI exits 2 or 1 on it). */
export class AgentRequestError extends Error {
  constructor(
    message: string,
    readonly kind: 'refused' | 'unknown-agent',
  ) {
    super(message);
    this.name = 'AgentRequestError';
  }
}

export interface AgentClientOptions {
  connection: Connection;
  namespace?: string;
  taskQueue: string;
  /** Tests force continue-as-new with a small number. */
  continueAsNewAfterEvents?: number;
}

export class AgentClient {
  readonly client: Client;

  constructor(private readonly opts: AgentClientOptions) {
    this.client = new Client({ connection: opts.connection, namespace: opts.namespace ?? 'default' });
  }

  /** Submit a task, starting the agent workflow if it is not running. */
  async submit(agentId: string, input: { goal: string; config: AgentConfig; priority?: number; taskId?: string }): Promise<SubmitTaskResult> {
    const workflowId = agentWorkflowId(agentId);
    const startWorkflowOperation = new WithStartWorkflowOperation<typeof agentWorkflow>('agentWorkflow', {
      workflowId,
      taskQueue: this.opts.taskQueue,
      args: [{ agentId, config: input.config, ...(this.opts.continueAsNewAfterEvents ? { continueAsNewAfterEvents: this.opts.continueAsNewAfterEvents } : {}) }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      staticSummary: `agent ${agentId}`,
      typedSearchAttributes: [{ key: AgentIdKey, value: agentId }],
    });
    try {
      return await this.client.workflow.executeUpdateWithStart(submitTaskUpdate, {
        args: [{ goal: input.goal, config: input.config, ...(input.priority !== undefined ? { priority: input.priority } : {}), ...(input.taskId ? { taskId: input.taskId } : {}) }],
        startWorkflowOperation,
      });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) throw new AgentRequestError(`task refused: ${causeMessage(err)}`, 'refused');
      throw err;
    }
  }

  /** The agent's `state` query; a clear error when there is no such agent. */
  async status(agentId: string): Promise<AgentStatus> {
    try {
      return await this.client.workflow.getHandle(agentWorkflowId(agentId)).query(agentStateQuery);
    } catch (err) {
      throw this.unknownAgent(err, agentId);
    }
  }

  /**
   * Wait until a task has a result (any outcome, SUSPENDED included) or was cancelled from the queue.
   */
  async waitForTask(agentId: string, taskId: string, opts: { pollMs?: number; timeoutMs?: number; after?: (r: TaskResult) => boolean } = {}): Promise<TaskResult> {
    const deadline = Date.now() + (opts.timeoutMs ?? 30 * 60_000);
    const accept = opts.after ?? (() => true);
    for (;;) {
      const s = await this.status(agentId);
      const result = s.tasks.find((t) => t.taskId === taskId);
      if (result && accept(result) && s.currentTask?.taskId !== taskId) return result;
      const cancelled = s.cancelledTasks.find((t) => t.taskId === taskId);
      if (cancelled) {
        return {
          agentId,
          taskId,
          workflowId: `${agentWorkflowId(agentId)}-${taskId}`,
          outcome: 'CANCELLED',
          agentState: s.agentState,
          reason: s.reason ?? { code: 'SYSTEM_HALT', message: cancelled.reason },
          ticks: 0,
          tokensUsed: 0,
          toolCalls: [],
          injections: [],
        };
      }
      if (Date.now() > deadline) throw new Error(`task ${taskId} of agent ${agentId} did not finish in time`);
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 100));
    }
  }

  async halt(agentId: string, input: { by?: string; note?: string } = {}): Promise<void> {
    await this.ensureExists(agentId);
    await this.client.workflow.getHandle(agentWorkflowId(agentId)).signal(haltSignal, input);
  }

  async unlock(agentId: string, input: UnlockInput = {}): Promise<UnlockResult> {
    await this.ensureExists(agentId);
    try {
      return await this.client.workflow.getHandle(agentWorkflowId(agentId)).executeUpdate(unlockUpdate, { args: [input] });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) throw new AgentRequestError(`unlock refused: ${causeMessage(err)}`, 'refused');
      throw err;
    }
  }

  async message(agentId: string, text: string, by?: string): Promise<void> {
    await this.ensureExists(agentId);
    await this.client.workflow.getHandle(agentWorkflowId(agentId)).signal(messageSignal, { text, ...(by ? { by } : {}) });
  }

  private async ensureExists(agentId: string): Promise<void> {
    try {
      const d = await this.client.workflow.getHandle(agentWorkflowId(agentId)).describe();
      if (d.status.name !== 'RUNNING') throw new AgentRequestError(`agent ${agentId} is not running (its workflow is ${d.status.name})`, 'unknown-agent');
    } catch (err) {
      throw this.unknownAgent(err, agentId);
    }
  }

  private unknownAgent(err: unknown, agentId: string): Error {
    if (err instanceof WorkflowNotFoundError || (err as { name?: string }).name === 'WorkflowNotFoundError') {
      return new AgentRequestError(`unknown agent "${agentId}": no workflow ${agentWorkflowId(agentId)}. Start one with \`starry run --agent ${agentId} …\``, 'unknown-agent');
    }
    return err as Error;
  }
}

function causeMessage(err: Error): string {
  let e: unknown = err;
  while ((e as Error).cause) e = (e as Error).cause;
  return (e as Error).message;
}
