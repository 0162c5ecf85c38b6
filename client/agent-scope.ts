/**
 * What AgentClient's parts (client/submit.ts, control.ts, reads.ts, task-results.ts, approvals.ts) act
 * with: its Temporal client, task queue and tenant; how an agent id becomes the full id and the workflow
 * id of an agent, and back to the id a tenant's client shows; and the agent's own state, or a clear
 * error for an agent that does not exist.
 */
import type { Client } from '@temporalio/client';
import { AgentIdSchema, parsePayload, type AgentStatus, type TaskResult } from '../core/contract';
import { NotFoundError } from '../core/errors';
import { AgentRefSchema, qualifiedAgentId } from '../core/tenant';
import { agentStateQuery, agentWorkflowId } from '../workflows/messages';
import { isNotFoundStatus } from './failures';

/** One AgentClient's Temporal client and settings (`AgentClientOptions` documents each). */
export interface AgentScope {
  readonly client: Client;
  /** The tenant the client acts for; undefined: any agent, by its full id. */
  readonly tenant: string | undefined;
  readonly taskQueue: string;
  readonly continueAsNewAfterEvents?: number;
  readonly acceptTimeoutMs?: number;
}

/**
 * An agent's full id, checked at the edge so a bad one is a clear error and never a workflow id: for a
 * tenant's client, the tenant's agent of that id (a plain id); otherwise the id as given, plain or a
 * tenant's (`acme:x`).
 */
export function fullId(s: AgentScope, agentId: string): string {
  if (s.tenant === undefined) return parsePayload(AgentRefSchema, agentId, 'agent id');
  return qualifiedAgentId(s.tenant, parsePayload(AgentIdSchema, agentId, 'agent id'));
}

/** The workflow id of the agent `agentId` names for this client (`agent-acme:x` for tenant acme's `x`). */
export function agentWorkflowIdOf(s: AgentScope, agentId: string): string {
  return agentWorkflowId(fullId(s, agentId));
}

/** An agent's full id as this client names it: without its tenant's prefix for a tenant's client. */
export function ownId(s: AgentScope, full: string): string {
  const prefix = qualifiedAgentId(s.tenant, '');
  return s.tenant !== undefined && full.startsWith(prefix) ? full.slice(prefix.length) : full;
}

/** A task's result naming its agent as this client does. */
export function ownResult(s: AgentScope, r: TaskResult): TaskResult {
  return s.tenant === undefined ? r : { ...r, agentId: ownId(s, r.agentId) };
}

/** The error of an agent that does not exist: what to do to start it. */
export function noAgent(s: AgentScope, agentId: string, why: string): NotFoundError {
  const t = s.tenant;
  return new NotFoundError(
    `unknown agent "${agentId}"${t !== undefined ? ` (tenant ${t})` : ''}: ${why}. ` +
      `Start one with \`starry run --agent ${agentId}${t !== undefined ? ` --tenant ${t}` : ''} …\``,
  );
}

/** `err` as `noAgent` when the server knows no such workflow; any other error as it is. */
export function unknownAgent(s: AgentScope, err: unknown, agentId: string): Error {
  if (isNotFoundStatus(err)) return noAgent(s, agentId, `no workflow ${agentWorkflowIdOf(s, agentId)}`);
  return err as Error;
}

/** The agent's own `state` query, without the running task's live counts (what waiting needs). */
export async function agentState(s: AgentScope, agentId: string): Promise<AgentStatus> {
  const workflowId = agentWorkflowIdOf(s, agentId);
  try {
    return await s.client.workflow.getHandle(workflowId).query(agentStateQuery);
  } catch (err) {
    throw unknownAgent(s, err, agentId);
  }
}

/** @returns the workflow ids of the agent's running tasks (its pending children), as the server has them. */
export async function ensureExists(s: AgentScope, agentId: string): Promise<string[]> {
  const workflowId = agentWorkflowIdOf(s, agentId);
  try {
    const d = await s.client.workflow.getHandle(workflowId).describe();
    if (d.status.name !== 'RUNNING')
      throw new NotFoundError(`agent ${agentId} is not running (its workflow is ${d.status.name})`);
    return (d.raw.pendingChildren ?? []).flatMap((c) => (c.workflowId ? [c.workflowId] : []));
  } catch (err) {
    throw unknownAgent(s, err, agentId);
  }
}
