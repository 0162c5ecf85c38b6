/**
 * A human's acts on a running agent (AgentClient's `halt`, `unlock`, `setLimits`, `message`): SYSTEM_HALT
 * as a signal sent ahead of every other agent's work, the others as updates whose refusal is the family's
 * error (core/errors/request.ts).
 */
import type { UpdateDefinition } from '@temporalio/common';
import {
  HaltInputSchema,
  HumanMessageSchema,
  LimitsInputSchema,
  parsePayload,
  UnlockInputSchema,
  type HaltInput,
  type LimitsInput,
  type LimitsResult,
  type MessageResult,
  type UnlockInput,
  type UnlockResult,
} from '../core/contract';
import { nothingToResume } from '../core/after-halt';
import { QUEUE_PRIORITY } from '../core/priority-inbox';
import { haltSignal, limitsUpdate, messageUpdate, unlockUpdate } from '../workflows/messages';
import { agentState, agentWorkflowIdOf, ensureExists, unknownAgent, type AgentScope } from './agent-scope';
import { updateFailure } from './failures';

/** AgentClient.halt: SYSTEM_HALT, the agent and its running task raised above every other agent's work. */
export async function halt(s: AgentScope, agentId: string, input: HaltInput = {}): Promise<void> {
  const payload = parsePayload(HaltInputSchema, input, 'halt');
  const workflowId = agentWorkflowIdOf(s, agentId);
  // The agent is raised above every other agent first, so the workflow task that takes the signal goes
  // before theirs on saturated workers. The signal does not wait for the read: a signal to an agent
  // that is gone or not running fails on its own, and then the read's error says which.
  const [exists, sent] = await Promise.allSettled([
    ensureExists(s, agentId),
    setPriority(s, workflowId, QUEUE_PRIORITY.halt)
      .catch(() => undefined)
      .then(() => s.client.workflow.getHandle(workflowId).signal(haltSignal, payload)),
  ]);
  if (exists.status === 'rejected') throw exists.reason;
  if (sent.status === 'rejected') throw unknownAgent(s, sent.reason, agentId);
  // The agent cancels its running task: the task's workflow task that cancels the call in flight goes
  // first too. Best effort: the halt is sent, and a task that just ended has nothing to raise.
  await Promise.all(exists.value.map((child) => setPriority(s, child, QUEUE_PRIORITY.halt).catch(() => undefined)));
}

/** A running workflow's task-queue priority (`QUEUE_PRIORITY`), from now on and across continue-as-new. */
async function setPriority(s: AgentScope, workflowId: string, priorityKey: number): Promise<void> {
  const { connection, options } = s.client;
  await connection.workflowService.updateWorkflowExecutionOptions({
    namespace: options.namespace,
    workflowExecution: { workflowId },
    workflowExecutionOptions: { priority: { priorityKey } },
    updateMask: { paths: ['priority'] },
    identity: options.identity,
  });
}

/** AgentClient.unlock: admin:unlock, the agent back among the others from the halt's priority. */
export async function unlock(s: AgentScope, agentId: string, input: UnlockInput = {}): Promise<UnlockResult> {
  const payload = parsePayload(UnlockInputSchema, input, 'unlock');
  // A resume asked of an agent with nothing suspended (after a halt, say): the answer says what there is.
  const before = payload.resume ? await agentState(s, agentId).catch(() => undefined) : undefined;
  const unlocked = await humanUpdate(s, agentId, unlockUpdate, payload, 'unlock refused');
  const note = unlocked.unlocked && before ? nothingToResume(agentId, before) : undefined;
  const result = note ? { ...unlocked, message: `${unlocked.message}; ${note}` } : unlocked;
  // Back among the other agents, from the halt's priority. Best effort: the unlock is done.
  await setPriority(s, agentWorkflowIdOf(s, agentId), QUEUE_PRIORITY.agent).catch(() => undefined);
  return result;
}

/** AgentClient.setLimits: admin:limits. */
export async function setLimits(s: AgentScope, agentId: string, input: LimitsInput): Promise<LimitsResult> {
  const payload = parsePayload(LimitsInputSchema, input, 'limits');
  return humanUpdate(s, agentId, limitsUpdate, payload, 'limits refused');
}

/** AgentClient.message: a human message, to the running task or kept for the next one. */
export async function message(s: AgentScope, agentId: string, text: string, by?: string): Promise<MessageResult> {
  const payload = parsePayload(HumanMessageSchema, { text, ...(by ? { by } : {}) }, 'message');
  return humanUpdate(s, agentId, messageUpdate, payload, 'message refused');
}

/** A human's update to a running agent; its refusal as the family's error, prefixed with `refused`. */
export async function humanUpdate<Ret, Arg>(
  s: AgentScope,
  agentId: string,
  update: UpdateDefinition<Ret, [Arg]>,
  payload: Arg,
  refused: string,
): Promise<Ret> {
  await ensureExists(s, agentId);
  try {
    return await s.client.workflow.getHandle(agentWorkflowIdOf(s, agentId)).executeUpdate(update, { args: [payload] });
  } catch (err) {
    throw updateFailure(err, refused);
  }
}
