/**
 * Every message the agent and task workflows accept (DESIGN.md §2), defined once and shared with the
 * clients. Names are the public contract: `submitTask`, `SYSTEM_HALT`, `admin:unlock`, `message`, `state`.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AgentConfig } from '../core/config';
import type { SafetyCounters } from '../core/safety-monitor';
import type { CancelledTask, HumanMessage, UnlockRecord } from '../core/agent-entity';
import type { AgentState, LockReason, TaskResult } from '../core/types';

export type { CancelledTask, HumanMessage, UnlockRecord };

export interface SubmitTaskInput {
  goal: string;
  /** 1 (first) .. 9; default 5. Priority 0 belongs to SYSTEM_HALT. */
  priority?: number;
  /** Replaces the agent's config from this task on. Validated by the caller (parseAgentConfig). */
  config?: AgentConfig;
  /** Caller-chosen id, for idempotent submits; default `task-<n>`. */
  taskId?: string;
}

export interface SubmitTaskResult {
  taskId: string;
  workflowId: string;
  position: number;
}

export interface HaltInput {
  by?: string;
  note?: string;
}

export interface UnlockInput {
  resume?: boolean;
  addTokens?: number;
  note?: string;
  by?: string;
}

export interface UnlockResult {
  unlocked: boolean;
  agentState: AgentState;
  message: string;
}

/** The agent's `state` query (DESIGN.md §6). */
export interface AgentStatus {
  agentId: string;
  agentState: AgentState;
  reason?: LockReason;
  tokensUsed: number;
  tokenBudget: number;
  queue: Array<{ taskId: string; priority: number; goal: string }>;
  currentTask?: { taskId: string; workflowId: string; tick: number };
  suspendedTask?: { taskId: string; workflowId: string };
  cancelledTasks: CancelledTask[];
  counters: SafetyCounters;
  /** The latest results, newest last. */
  tasks: TaskResult[];
  unlocks: UnlockRecord[];
  guide: string;
  llm: string;
}

/** Live progress of a task, for its `state` query. */
export interface TaskStatus {
  taskId: string;
  tick: number;
  tokensUsed: number;
  halted: boolean;
  toolCalls: TaskResult['toolCalls'];
  injections: TaskResult['injections'];
}

/** What a task reports to its agent after each tick (for the agent's state query and search attributes). */
export interface TaskProgress {
  taskId: string;
  tick: number;
  /** The task's own usage so far, over all its runs. */
  tokensUsed: number;
  /** Usage of this run only (the agent adds it to its total when the run ends). */
  runTokens: number;
  counters: SafetyCounters;
  lastErrorCode?: string;
}

export const submitTaskUpdate = defineUpdate<SubmitTaskResult, [SubmitTaskInput]>('submitTask');
export const haltSignal = defineSignal<[HaltInput?]>('SYSTEM_HALT');
export const unlockUpdate = defineUpdate<UnlockResult, [UnlockInput]>('admin:unlock');
export const unlockSignal = defineSignal<[UnlockInput?]>('admin:unlock');
export const messageSignal = defineSignal<[HumanMessage]>('message');
export const agentStateQuery = defineQuery<AgentStatus>('state');
export const taskStateQuery = defineQuery<TaskStatus>('state');
export const taskProgressSignal = defineSignal<[TaskProgress]>('taskProgress');

/** Workflow ids: one entity per agent, one workflow per task. */
export const agentWorkflowId = (agentId: string) => `agent-${agentId}`;
export const taskWorkflowId = (agentId: string, taskId: string) => `agent-${agentId}-${taskId}`;
