/**
 * Provider-neutral conversation shapes. Every LLM provider activity maps these to its own wire format,
 * so the workflow and the context strategy never see a provider's types.
 */
import type { LlmSpec } from './llm-spec';

/** A tool call as the model produced it. `args` is absent when `rawArguments` did not parse. */
export interface LlmToolCall {
  id: string;
  name: string;
  args?: unknown;
  /** The model's raw argument text, kept when it is not valid JSON (an output anomaly). */
  rawArguments?: string;
}

export type ChatMessage =
  | { role: 'system'; text: string }
  | { role: 'user'; text: string }
  | {
      role: 'assistant';
      text?: string;
      toolCalls?: LlmToolCall[];
      /** The provider's own parts (e.g. Gemini `thoughtSignature`), replayed unchanged. */
      providerParts?: unknown[];
    }
  | {
      role: 'tool';
      callId: string;
      name: string;
      text: string;
      /** The call failed and `text` is its pain: a provider that can say so on the wire (Bedrock's `toolResult` status) does. */
      isError?: true;
    };

/**
 * A message of the transcript kept in the content store (issue: history grows with new content only):
 * the workflow holds its address and size, the LLM activity reads it back. `ref` is the SHA-256 of the
 * message's JSON; `bytes` its size, what the token-aware window counts.
 */
export interface StoredMessage {
  role: ChatMessage['role'];
  ref: string;
  bytes: number;
}

/** A message as the task workflow keeps it: inline (what the workflow wrote itself) or stored. */
export type TranscriptEntry = ChatMessage | StoredMessage;

/** True when the entry's content lives in the store. */
export function isStored(m: TranscriptEntry): m is StoredMessage {
  return 'ref' in m;
}

/**
 * An LLM call's context as references: the messages of an earlier call's context (`base`, a manifest
 * the LLM activity stored), minus the oldest `drop` after its anchored head, plus `append`. A tick's
 * activity input then carries only what is new, whatever the size of the context.
 */
export interface ContextDelta {
  /** The manifest of an earlier call's context (its answer included); absent on the first call. */
  base?: string;
  /** The anchored head (system prompt, goal): on the first call only, the base has it after. */
  head?: TranscriptEntry[];
  /** Messages of the base after its head left out, oldest first. */
  drop: number;
  /** Messages after the base's, in order. */
  append: TranscriptEntry[];
  /**
   * A summary that replaces the turns left out so far (and the base's summary): sent right after the
   * head from this call on. Absent: the base's summary, if any, stays.
   */
  summary?: StoredSummary;
}

/**
 * Which part of a task's transcript a summary stands for: positions in the whole transcript (the head
 * first, end exclusive) and the numbers of the LLM calls (one per tick) whose turns it covers.
 */
export interface SummaryCovers {
  entries: [from: number, to: number];
  calls: [from: number, to: number];
}

/** A summary as the transcript store keeps it: its message, and its record (what it covers, what it replaced). */
export interface StoredSummary {
  message: StoredMessage;
  /** The blob of the summary's `SummaryRecord`. */
  record: string;
  covers: SummaryCovers;
}

/** Input of the summarize activity: the turns a window leaves out, to be replaced by a summary. */
export interface SummaryInput {
  llm: LlmSpec;
  agentId: string;
  taskId: string;
  tick: number;
  /** The next LLM call's number (the summary is written before it). */
  callNumber: number;
  /** The turns left out, oldest first. */
  entries: TranscriptEntry[];
  /** The summary these turns followed: the new one replaces it, so it summarizes it too. */
  previous?: StoredSummary;
  covers: SummaryCovers;
  maxOutputTokens: number;
  maxRetryDelayMs?: number;
}

/** Output of the summarize activity. */
export interface SummaryResponse {
  summary: StoredSummary;
  /** The summary's text, cut to fit the task's records. */
  text: string;
  usage: TokenUsage;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /**
   * Of `inputTokens`, those the provider read from its prompt cache (billed at its cached rate), when it
   * reports them: OpenAI's `prompt_tokens_details.cached_tokens`, Gemini's `cachedContentTokenCount`.
   */
  cachedInputTokens?: number;
}

/** A tool as declared to the model. `parameters` is a JSON Schema object. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Input of an LLM activity. */
export interface LlmRequest {
  /** The LLM, as the edge parsed its `--llm` spec (`{ provider: 'gemini', model: 'gemini-2.5-flash' }`). */
  llm: LlmSpec;
  agentId: string;
  taskId: string;
  /** The LLM call's number within the task, from 1: a retried call sees the same number. */
  callNumber: number;
  tick: number;
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** Capped to what is left of the agent's token budget. */
  maxOutputTokens: number;
  /** The retry policy's maximum interval: a provider's `Retry-After` is honoured up to this. */
  maxRetryDelayMs?: number;
}

/**
 * Input of the LLM activity: an `LlmRequest` whose context is either whole (`messages` and `tools`: a direct
 * call, or a run without the transcript store) or references (`context`; `tools` only when it has no base).
 * The activity resolves it into the `LlmRequest` a provider receives.
 */
export type LlmCallInput = Omit<LlmRequest, 'messages' | 'tools'> & {
  messages?: ChatMessage[];
  tools?: ToolSpec[];
  context?: ContextDelta;
};

/** Output of an LLM activity. */
export interface LlmResponse {
  text?: string;
  toolCalls: LlmToolCall[];
  usage: TokenUsage;
  providerParts?: unknown[];
  /** With a `context` request: the answer as stored (its provider parts live there, not here). */
  message?: StoredMessage;
  /**
   * With a `context` request: the manifest of this call's context with the answer appended (the next
   * call's base), and the bytes of the messages and tools it sent (to calibrate the token estimate).
   */
  context?: { ref: string; sentBytes: number };
}

/**
 * The model's turn as a message of the transcript: what it said, the calls it asked for and its own
 * parts, each only when present (the shape every provider maps back onto its wire).
 */
export function assistantMessage(response: Pick<LlmResponse, 'text' | 'toolCalls' | 'providerParts'>): ChatMessage {
  return {
    role: 'assistant',
    ...(response.text !== undefined ? { text: response.text } : {}),
    ...(response.toolCalls.length ? { toolCalls: response.toolCalls } : {}),
    ...(response.providerParts ? { providerParts: response.providerParts } : {}),
  };
}

/**
 * What is wrong with a provider's reported usage, or undefined: counts must be whole numbers >= 0.
 * The budget rung and the search attributes trust them, so a fractional, negative or non-numeric
 * count (an output anomaly of the provider) must never get past the LLM activity.
 *
 * ```ts
 * usageProblem({ inputTokens: 10.5, outputTokens: 3 }) // 'inputTokens is 10.5, not a whole number >= 0'
 * ```
 */
export function usageProblem(usage: unknown): string | undefined {
  const u = (usage ?? {}) as Record<string, unknown>;
  const bad = (['inputTokens', 'outputTokens'] as const).filter(
    (k) => !(typeof u[k] === 'number' && Number.isSafeInteger(u[k]) && (u[k] as number) >= 0),
  );
  return bad.length
    ? bad.map((k) => `${k} is ${JSON.stringify(u[k]) ?? 'missing'}, not a whole number >= 0`).join('; ')
    : undefined;
}
