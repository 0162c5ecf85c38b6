/**
 * Every message the agent and task workflows accept, defined once and shared with the clients. Names
 * are the public contract (docs/ARCHITECTURE.md): `submitTask`, `SYSTEM_HALT` (alias `STOP`),
 * `admin:unlock`, `message`, `state`.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalDecision, ApprovalsReport, DecisionInput } from '../core/approval';
import type { TaskRunOutput } from '../core/task-run';
import type {
  AgentStatus,
  HaltInput,
  HumanMessage,
  MessageResult,
  SubmitTaskInput,
  SubmitTaskResult,
  TaskProgress,
  TaskStatus,
  UnlockInput,
  UnlockResult,
} from '../core/contract';

// The payload types are the contract's (core/contract.ts): handlers check every payload with its schema.
export type {
  AgentStatus,
  CancelledTask,
  HaltInput,
  HumanMessage,
  MessageResult,
  SubmitTaskInput,
  SubmitTaskResult,
  TaskProgress,
  TaskStatus,
  UnlockInput,
  UnlockRecord,
  UnlockResult,
} from '../core/contract';

export const submitTaskUpdate = defineUpdate<SubmitTaskResult, [SubmitTaskInput]>('submitTask');
export const haltSignal = defineSignal<[HaltInput?]>('SYSTEM_HALT');
/** The seeds name the kill switch "SYSTEM_HALT or STOP": the same handler under both names. */
export const stopSignal = defineSignal<[HaltInput?]>('STOP');
export const unlockUpdate = defineUpdate<UnlockResult, [UnlockInput]>('admin:unlock');
export const unlockSignal = defineSignal<[UnlockInput?]>('admin:unlock');
export const messageSignal = defineSignal<[HumanMessage]>('message');
/** The same human message as an update, so a refused one (too many) reaches its sender. */
export const messageUpdate = defineUpdate<MessageResult, [HumanMessage]>('sendMessage');
export const agentStateQuery = defineQuery<AgentStatus>('state');
export const taskStatusQuery = defineQuery<TaskStatus>('taskStatus');
/**
 * @deprecated The task's status query under its 0.1 name, which it shared with the agent's `state`;
 * answered until 0.2. Use taskStatusQuery.
 */
export const taskStateQuery = defineQuery<TaskStatus>('state');
export const taskProgressSignal = defineSignal<[TaskProgress]>('taskProgress');
/**
 * A running task's counts (tick, tokens, counters): what clients overlay on the agent's `state`, which hears of them
 * every few ticks.
 */
export const taskProgressQuery = defineQuery<TaskProgress>('progress');
/**
 * Internal: a new Worker Deployment Version became current (workers/versioning.ts sends it to every
 * running agent of an older one), so an idle agent wakes and continues as new onto it.
 */
export const newVersionSignal = defineSignal('newVersion');
/**
 * A human's decision on a call that waits for approval (`starry approve` / `deny`, `POST
 * /v1/agents/{id}/approvals/{callId}`): refused when no such call waits (NotFound) or it was decided
 * already (Refused); answers the decision as taken.
 */
export const decideApprovalUpdate = defineUpdate<ApprovalDecision, [DecisionInput]>('decideApproval');
/** Internal: the running task's waiting calls, whenever they change. */
export const approvalsSignal = defineSignal<[ApprovalsReport]>('approvals');
/** Internal: a decision the agent took, forwarded to the task whose call waits. */
export const approvalDecidedSignal = defineSignal<[ApprovalDecision]>('approvalDecided');
/** Internal: a cancelled task's output to its agent (TaskRunOutput), just before the task ends CANCELED. */
export const taskEndedSignal = defineSignal<[TaskRunOutput]>('taskEnded');

/**
 * The task workflow's type (workflows/task.ts `taskWorkflow`), by name: the agent starts its tasks by it
 * without evaluating the task's modules, which every new agent workflow would otherwise build.
 */
export const TASK_WORKFLOW_TYPE = 'taskWorkflow';
/** The failure type a FAILED task's workflow fails with; its first detail is the TaskRunOutput. */
export const TASK_FAILED = 'TaskFailed';

/** Workflow ids: one entity per agent, one workflow per task. */
export const agentWorkflowId = (agentId: string) => `agent-${agentId}`;
export const taskWorkflowId = (agentId: string, taskId: string) => `agent-${agentId}-${taskId}`;

/** The Web UI page of a workflow (of every workflow of the namespace without one): CLI output and alert links. */
export function webUiLink(uiBase: string, workflowId?: string, namespace = 'default'): string {
  const list = `${uiBase.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows`;
  return workflowId ? `${list}/${encodeURIComponent(workflowId)}` : list;
}
