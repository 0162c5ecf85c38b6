/**
 * Pain conduction (docs/ARCHITECTURE.md#where-each-rule-lives): the Core reports facts, a Guide gives them meaning for
 * the LLM.
 * Guides are pure and deterministic because they run inside the workflow.
 */
import type { AgentConfig } from '../config';
import type { NormalizedError } from '../errors';

/** What a guide knows about the failure it interprets. */
export interface PainContext {
  tick: number;
  toolName: string;
  args: unknown;
  /** Consecutive failed operations including this one. */
  consecutiveFailures: number;
  /** The agent's permitted workspace roots. */
  workspace: readonly string[];
  /** The tools the agent is offered (absent: the built-in ones). */
  tools?: readonly string[];
}

/** A behavioural breaker that asks for text in the context (docs/ARCHITECTURE.md#the-safety-ladder). */
export interface SafetyAlert {
  kind: 'REPEAT_ALERT' | 'FRUSTRATION';
  toolName: string;
  fingerprint: string;
  consecutiveFailures: number;
  /** Length of the run of identical failures. */
  repeatCount: number;
}

export interface Guide {
  id: string;
  /** One line that says how this guide reads failures, for `starry` help and docs. */
  description: string;
  /** `tools`: the names of the tools the worker offers (absent: the built-in ones `tools.allow` names). */
  systemPrompt(agent: AgentConfig, tools?: readonly string[]): string;
  /** Becomes the tool-result text the LLM sees for a failed call. */
  interpretPain(error: NormalizedError, ctx: PainContext): string;
  /** Repeat and frustration texts, injected after the turn's tool results. */
  interpretAlert(alert: SafetyAlert, ctx: PainContext): string;
}
