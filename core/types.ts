/**
 * The public contract's data shapes: agent states, lock reasons, task results. Their schemas live in
 * `core/contract.ts` (the types are inferred from them); this module keeps the state predicates and the
 * suspended task's checkpoint, which is internal to the agent.
 */
import type { StoredSummary, TranscriptEntry } from './llm';
import type { AgentState, Injection, ToolCallRecord } from './contract';

export type {
  AgentState,
  Injection,
  InjectionKind,
  LockReason,
  LockReasonCode,
  TaskOutcome,
  TaskResult,
  ToolCallRecord,
} from './contract';

/** States that refuse every task until `admin:unlock`. */
export const LOCKED_STATES: readonly AgentState[] = ['SAFETY_LOCKOUT', 'ERROR_PAUSED', 'STOPPED'];

/** True when the agent refuses tasks until a human unlocks it. */
export function isLocked(state: AgentState): boolean {
  return LOCKED_STATES.includes(state);
}

/**
 * A lock reason (or an error) as `CODE: message`, without saying the code twice when the message starts
 * with it already.
 *
 * ```ts
 * reasonText({ code: 'SYSTEM_HALT', message: 'SYSTEM_HALT by alice' }) // 'SYSTEM_HALT by alice'
 * reasonText({ code: 'LOOP_CAP', message: 'Infinite loop suspected' }) // 'LOOP_CAP: Infinite loop suspected'
 * ```
 */
export function reasonText(reason: { code: string; message: string }): string {
  return reason.message.startsWith(reason.code) ? reason.message : `${reason.code}: ${reason.message}`;
}

/** Everything a suspended task needs to continue where it stopped (`admin:unlock --resume`). */
export interface TaskCheckpoint {
  /** The anchored head, then (with the transcript store) the last call's window and what came after it. */
  messages: TranscriptEntry[];
  /** The manifest of the last call's context (its answer included): it holds `messages[from..to)` after the head. */
  sent?: { ref: string; from: number; to: number };
  /** Bytes per token of the target model, calibrated by the provider's counts. */
  bytesPerToken?: number;
  /**
   * The summary sent after the head in place of the turns the window left out (`summarize` strategy);
   * `sent` once a call's manifest holds it.
   */
  summary?: StoredSummary & { sent?: boolean };
  /** What left the window so far: transcript entries after the head, and the LLM calls (answers) among them. */
  trimmed?: { entries: number; calls: number };
  ticks: number;
  callNumber: number;
  tokensUsed: number;
  /** Of the input tokens, those read from the provider's cache; absent while none were reported. */
  cachedInputTokens?: number;
  /** What the task's LLM calls cost in USD, when it has a price for its model. */
  costUsd?: number;
  toolCalls: ToolCallRecord[];
  injections: Injection[];
  verifyAsked: boolean;
}

/**
 * What an agent's or a task's search attributes say (workflows/search-attributes.ts `searchAttributes`):
 * its state (none for a closed task), tick, tokens, last error code and lock reason.
 */
export interface Reported {
  agentId: string;
  agentState: AgentState | null;
  tick: number;
  tokensUsed: number;
  lastErrorCode?: string;
  lockReason: string | null;
}
