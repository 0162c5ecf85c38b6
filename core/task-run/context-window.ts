/**
 * The context window of a task's calls (seeds: context anchoring and strategies): what each LLM call
 * sends, the anchored head always and a window of the transcript after it, within the config's limits
 * (messages, tokens at the calibrated bytes per token). With the transcript store (the task workflow's
 * runs) the context strategy plans where each window opens, a call sends a delta against the last one's
 * stored manifest, and the checkpoint keeps only the head and that window; without it (the pure tests)
 * each call carries the whole window inline, bounded by Temporal's payload limit. Plain data.
 */
import { jsonBytes } from '../compact';
import type { AgentConfig } from '../config';
import {
  assembleContext,
  calibrate,
  DEFAULT_BYTES_PER_TOKEN,
  entriesTokens,
  resultChars,
  type WindowLimits,
} from '../context';
import {
  checkedPlan,
  DEFAULT_CONTEXT_STRATEGY,
  getContextStrategy,
  type ContextPlan,
  type ContextStrategy,
  type ContextView,
} from '../context-strategy';
import { normalizedError, type NormalizedError } from '../errors';
import {
  assistantMessage,
  type ChatMessage,
  type ContextDelta,
  type LlmCallInput,
  type LlmResponse,
  type ToolSpec,
} from '../llm';
import { LIMITS } from '../payloads';
import { MAX_RESULT_CHARS } from '../transcript';
import type { TaskCheckpoint } from '../types';
import { ANCHORED } from './checkpoint';
import { storedSummary } from './summary';

export interface WindowData {
  /** Large content in the transcript store, the checkpoint carrying references. */
  store: boolean;
  /** Where the window of the call in flight opened (store mode), to record what its manifest holds. */
  windowFrom: number;
  /** The context strategy's plan for the tick's call, made before its summary. */
  planned?: Required<ContextPlan>;
}

/** What an LLM call carries of the context. */
export type CallContext = Pick<LlmCallInput, 'messages' | 'tools' | 'context'>;

export class ContextWindow {
  constructor(readonly data: WindowData) {}

  static of(store: boolean): ContextWindow {
    return new ContextWindow({ store, windowFrom: ANCHORED });
  }

  /** The config's limits, at the checkpoint's calibrated bytes per token. */
  limits(cp: TaskCheckpoint, config: AgentConfig): WindowLimits {
    const { contextWindow, contextTokens } = config;
    return {
      maxMessages: contextWindow,
      maxTokens: contextTokens ?? Number.MAX_SAFE_INTEGER,
      bytesPerToken: cp.bytesPerToken ?? DEFAULT_BYTES_PER_TOKEN,
      anchored: ANCHORED,
    };
  }

  /** Estimated tokens the limits leave after the anchored head. */
  roomAfterHead(cp: TaskCheckpoint, config: AgentConfig): number {
    const limits = this.limits(cp, config);
    return limits.maxTokens - entriesTokens(cp.messages.slice(0, ANCHORED), limits.bytesPerToken);
  }

  /** Characters each result of a turn of `calls` calls may keep in the context (store mode: the tool activity cuts it). */
  resultChars(cp: TaskCheckpoint, config: AgentConfig, calls = 1): number {
    return resultChars(cp.messages.slice(0, ANCHORED), this.limits(cp, config), MAX_RESULT_CHARS, calls);
  }

  /**
   * The strategy's plan for the tick's call when it asks for a summary of the turns its window drops
   * (store mode, a strategy that summarizes), else undefined. The plan is kept for the call.
   */
  summaryPlan(cp: TaskCheckpoint, config: AgentConfig): Required<ContextPlan> | undefined {
    if (!this.data.store) return undefined;
    const strategy = contextStrategy(config);
    if (!('plan' in strategy)) return undefined;
    this.data.planned = this.plan(cp, config, strategy);
    return this.data.planned.summarize ? this.data.planned : undefined;
  }

  /**
   * The context of the tick's call: store mode, a delta against the last call's manifest (the first call
   * sends the head and the tools); else the window inline, or the error that fails the task when it is
   * past what one LLM payload may carry (or the config's strategy is not this worker's).
   */
  callContext(
    cp: TaskCheckpoint,
    config: AgentConfig,
    tools: ToolSpec[],
  ): { context: CallContext } | { error: NormalizedError } {
    if (this.data.store) {
      const strategy = contextStrategy(config);
      if (!('plan' in strategy)) return { error: strategy };
      const delta = this.delta(cp, config, strategy);
      return { context: { context: delta, ...(delta.base ? {} : { tools }) } };
    }
    const messages = assembleContext({ messages: cp.messages as ChatMessage[], window: config.contextWindow });
    // An LLM call's input is one payload: past Temporal's limit it could not even be scheduled.
    const contextBytes = jsonBytes(messages);
    if (contextBytes > LIMITS.llmInputBytes) {
      const error = normalizedError({
        code: 'E_OUTPUT_TOO_LARGE',
        kind: 'execution',
        source: 'task context',
        message: `the context of tick ${cp.ticks} is ${Math.ceil(contextBytes / 1000)} KB, more than the ${LIMITS.llmInputBytes / 1000} KB an LLM call may carry (Temporal's payload limit is 2 MB): lower contextWindow or tools.maxOutputBytes and submit again`,
      });
      return { error };
    }
    return { context: { messages, tools } };
  }

  /**
   * About how many tokens the call `callContext` just built sends: the window it holds and the tools, at
   * the task's calibrated bytes per token.
   */
  inputEstimate(cp: TaskCheckpoint, config: AgentConfig, tools: ToolSpec[]): number {
    const messages = this.data.store
      ? [...cp.messages.slice(0, ANCHORED), ...cp.messages.slice(this.data.windowFrom)]
      : assembleContext({ messages: cp.messages as ChatMessage[], window: config.contextWindow });
    const bytes = jsonBytes(messages) + jsonBytes(tools);
    return Math.ceil(bytes / (cp.bytesPerToken ?? DEFAULT_BYTES_PER_TOKEN));
  }

  /**
   * The model's answer enters the transcript. Store mode: the call's context is stored (its manifest
   * holds the window and the answer), so the checkpoint keeps only the head and that window, its memory
   * and what it carries bounded however long the task; the calibration learns from what was sent.
   */
  answered(cp: TaskCheckpoint, response: LlmResponse): void {
    if (!response.message || !response.context) {
      cp.messages.push(assistantMessage(response));
      return;
    }
    cp.messages.push(response.message);
    const { ref, sentBytes } = response.context;
    cp.bytesPerToken = calibrate(sentBytes, response.usage.inputTokens, cp.bytesPerToken ?? DEFAULT_BYTES_PER_TOKEN);
    const from = this.data.windowFrom;
    const left = cp.messages.slice(ANCHORED, from);
    if (left.length) {
      const trimmed = cp.trimmed ?? { entries: 0, calls: 0 };
      cp.trimmed = {
        entries: trimmed.entries + left.length,
        calls: trimmed.calls + left.filter((m) => m.role === 'assistant').length,
      };
    }
    if (cp.summary) cp.summary.sent = true;
    cp.messages = [...cp.messages.slice(0, ANCHORED), ...cp.messages.slice(from)];
    cp.sent = { ref, from: ANCHORED, to: cp.messages.length };
  }

  /**
   * The next call's context as a delta: the base (the last call's manifest, its answer included) less
   * what the window no longer holds, plus what came after it. The first call sends the head.
   */
  private delta(cp: TaskCheckpoint, config: AgentConfig, strategy: ContextStrategy): ContextDelta {
    const sent = cp.sent;
    // The window only moves forward: what the base dropped is not sent again (checkedPlan).
    const { start } = this.data.planned ?? this.plan(cp, config, strategy);
    delete this.data.planned;
    this.data.windowFrom = start;
    const summary = cp.summary && !cp.summary.sent ? { summary: storedSummary(cp.summary) } : {};
    if (!sent) return { head: cp.messages.slice(0, ANCHORED), drop: 0, append: cp.messages.slice(start), ...summary };
    return { base: sent.ref, drop: start - sent.from, append: cp.messages.slice(sent.to), ...summary };
  }

  /**
   * The strategy's plan for the next call: what it sees is the head (with the summary in effect, when
   * there is one) and every entry since the last call's window opened.
   */
  private plan(cp: TaskCheckpoint, config: AgentConfig, strategy: ContextStrategy): Required<ContextPlan> {
    const summary = cp.summary ? [cp.summary.message] : [];
    const view: ContextView = {
      entries: [...cp.messages.slice(0, ANCHORED), ...summary, ...cp.messages.slice(ANCHORED)],
      limits: { ...this.limits(cp, config), anchored: ANCHORED + summary.length } as Required<WindowLimits>,
      ...(cp.sent ? { previousStart: cp.sent.from + summary.length } : {}),
    };
    const plan = checkedPlan(strategy.plan(view), view);
    return { start: plan.start - summary.length, summarize: plan.summarize };
  }
}

/** The config's context strategy, or the error that fails the task when this worker has none by that id. */
export function contextStrategy(config: AgentConfig): ContextStrategy | NormalizedError {
  const id = config.context?.strategy ?? DEFAULT_CONTEXT_STRATEGY;
  try {
    return getContextStrategy(id);
  } catch (err) {
    return normalizedError({
      code: 'EINVAL',
      kind: 'execution',
      source: 'context strategy',
      message: err instanceof Error ? err.message : String(err),
      suggestion: 'Submit the task with a context.strategy this worker registers, or run it on a worker that has it.',
    });
  }
}
