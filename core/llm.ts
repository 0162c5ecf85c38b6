/**
 * Provider-neutral conversation shapes. Every LLM provider activity maps these to its own wire format,
 * so the workflow and the context strategy never see a provider's types.
 */

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
  | { role: 'tool'; callId: string; name: string; text: string };

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** A tool as declared to the model. `parameters` is a JSON Schema object. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Input of an LLM activity. */
export interface LlmRequest {
  /** The `--llm` spec, e.g. `scripted:/abs/path.json` or `gemini:gemini-2.5-flash`. */
  llm: string;
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

/** Output of an LLM activity. */
export interface LlmResponse {
  text?: string;
  toolCalls: LlmToolCall[];
  usage: TokenUsage;
  providerParts?: unknown[];
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
  const bad = (['inputTokens', 'outputTokens'] as const).filter((k) => !(typeof u[k] === 'number' && Number.isSafeInteger(u[k]) && (u[k] as number) >= 0));
  return bad.length ? bad.map((k) => `${k} is ${JSON.stringify(u[k]) ?? 'missing'}, not a whole number >= 0`).join('; ') : undefined;
}
