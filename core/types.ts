/**
 * The public contract's data shapes (DESIGN.md §6): agent states, lock reasons, task results.
 * Plain serialisable data: it crosses workflow inputs, queries, continue-as-new and the CLI's JSON.
 */
import type { NormalizedError } from './errors';

/** The agent state machine of the seeds. */
export type AgentState = 'WAITING_FOR_EVENT' | 'EXECUTING' | 'SAFETY_LOCKOUT' | 'ERROR_PAUSED' | 'STOPPED';

/** States that refuse every task until `admin:unlock`. */
export const LOCKED_STATES: readonly AgentState[] = ['SAFETY_LOCKOUT', 'ERROR_PAUSED', 'STOPPED'];

/** True when the agent refuses tasks until a human unlocks it. */
export function isLocked(state: AgentState): boolean {
  return LOCKED_STATES.includes(state);
}

/** Why an agent is locked (or why a task stopped). */
export type LockReasonCode =
  | 'LOOP_CAP'
  | 'BUDGET_EXHAUSTED'
  | 'REPEATED_FAILURE'
  | 'ERROR_CASCADE'
  | 'SYSTEM_HALT'
  | 'FATAL';

export interface LockReason {
  code: LockReasonCode;
  message: string;
}

/** How one task ended. SUSPENDED: a breaker locked the agent; `admin:unlock` resumes or aborts it. */
export type TaskOutcome = 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'SUSPENDED' | 'ABORTED';

/** One tool call as the loop saw it. */
export interface ToolCallRecord {
  tick: number;
  name: string;
  args: unknown;
  fingerprint: string;
  status: 'ok' | 'failed' | 'skipped';
  error?: NormalizedError;
}

export type InjectionKind = 'PAIN' | 'REPEAT_ALERT' | 'FRUSTRATION' | 'VERIFY' | 'MESSAGE';

/** Text the system put into the LLM's context: pain, alerts, human messages. */
export interface Injection {
  tick: number;
  kind: InjectionKind;
  text: string;
}

/** The result JSON of `starry run --json` and of the `state` query's task entries. */
export interface TaskResult {
  agentId: string;
  taskId: string;
  workflowId: string;
  outcome: TaskOutcome;
  agentState: AgentState;
  reason?: LockReason;
  ticks: number;
  tokensUsed: number;
  toolCalls: ToolCallRecord[];
  injections: Injection[];
  finalText?: string;
  /** Present when the task FAILED: what the provider or the system said. */
  error?: NormalizedError;
}

/** Everything a suspended task needs to continue where it stopped (`admin:unlock --resume`). */
export interface TaskCheckpoint {
  messages: import('./llm').ChatMessage[];
  ticks: number;
  callNumber: number;
  tokensUsed: number;
  toolCalls: ToolCallRecord[];
  injections: Injection[];
  verifyAsked: boolean;
}
