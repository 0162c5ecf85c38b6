/**
 * The tool calls that wait for a human (AgentClient's `approvals` and `decide`): one agent's, or those of
 * every waiting agent of the client's tenant, and the decision on one.
 */
import type { ApprovalDecision } from '../core/approval';
import { DecisionInputSchema, parsePayload, type ApprovalList } from '../core/contract';
import { decideApprovalUpdate } from '../workflows/messages';
import { agentState, ownId, type AgentScope } from './agent-scope';
import { humanUpdate } from './control';
import { listAgents } from './reads';

/** Agents a listing of every waiting agent's calls asks at most. */
const MAX_WAITING_AGENTS = 1000;

/** AgentClient.approvals: the waiting calls, oldest first. */
export async function approvals(s: AgentScope, agentId?: string): Promise<ApprovalList> {
  const ids = agentId !== undefined ? [agentId] : await waitingAgents(s);
  const statuses = await Promise.all(
    ids.map((id) => agentState(s, id).catch((err) => (agentId === undefined ? undefined : Promise.reject(err)))),
  );
  const list = statuses
    .flatMap((st) => (st?.approvals ?? []).map((p) => ({ ...p, agentId: ownId(s, st!.agentId) })))
    .sort((a, b) => a.askedAt.localeCompare(b.askedAt));
  return { approvals: list };
}

/** The agents in WAITING_FOR_APPROVAL, as the visibility store lists them, a page at a time. */
async function waitingAgents(s: AgentScope): Promise<string[]> {
  const ids: string[] = [];
  let token: string | undefined;
  do {
    const page = await listAgents(s, {
      state: 'WAITING_FOR_APPROVAL',
      pageSize: 200,
      ...(token ? { nextPageToken: token } : {}),
    });
    ids.push(...page.agents.map((a) => a.agentId));
    token = page.nextPageToken;
  } while (token && ids.length < MAX_WAITING_AGENTS);
  return ids;
}

/** A decision on a call that waits: `args` (approve only) replace the model's, `reason` (deny) reaches it as pain. */
export interface DecideInput {
  callId: string;
  decision: 'approve' | 'deny';
  reason?: string;
  note?: string;
  args?: Record<string, unknown>;
  by?: string;
}

/** AgentClient.decide: approve or deny a call that waits. */
export async function decide(s: AgentScope, agentId: string, input: DecideInput): Promise<ApprovalDecision> {
  const payload = parsePayload(DecisionInputSchema, input, 'decision');
  return humanUpdate(s, agentId, decideApprovalUpdate, payload, 'decision refused');
}
