/**
 * The summary of the turns a window drops (seeds: context strategies; the `summarize` strategy): the
 * request the tick's summary call gets, what covers which turns and calls, the summary written in place
 * of those turns (and of any earlier summary), and a summary that failed, which the task only notes.
 */
import type { AgentConfig } from '../config';
import type { ContextPlan } from '../context-strategy';
import { SUMMARY_MAX_TOKENS } from '../context-summary';
import type { NormalizedError } from '../errors';
import type { StoredSummary, SummaryInput, SummaryResponse } from '../llm';
import type { TaskCheckpoint } from '../types';
import { ANCHORED } from './checkpoint';
import type { TaskRunInput } from './io';

/** A summary's output is capped at 1/SUMMARY_SHARE of the room after the head (a quarter). */
const SUMMARY_SHARE = 4;

/** What a summary request is made of besides the checkpoint. */
export interface SummaryFacts {
  config: AgentConfig;
  input: Pick<TaskRunInput, 'agentId' | 'taskId'>;
  /** The strategy's plan for the tick's call: the window opens at `start`. */
  planned: Required<ContextPlan>;
  /** What the budget lets the call produce. */
  maxOutputTokens: number;
  /** Estimated tokens the limits leave after the anchored head. */
  roomAfterHead: number;
}

/** The summary call for the turns from where the last call's window opened to where the next one's opens. */
export function summaryRequest(cp: TaskCheckpoint, facts: SummaryFacts): SummaryInput {
  const { config, input, planned } = facts;
  const from = cp.sent?.from ?? ANCHORED;
  const entries = cp.messages.slice(from, planned.start);
  const trimmed = cp.trimmed ?? { entries: 0, calls: 0 };
  const calls = trimmed.calls + entries.filter((m) => m.role === 'assistant').length;
  const previous = cp.summary ? { previous: storedSummary(cp.summary) } : {};
  return {
    llm: config.llm,
    agentId: input.agentId,
    taskId: input.taskId,
    tick: cp.ticks,
    callNumber: cp.callNumber + 1,
    entries,
    ...previous,
    covers: {
      entries: [cp.summary?.covers.entries[0] ?? from + trimmed.entries, planned.start + trimmed.entries],
      calls: [cp.summary?.covers.calls[0] ?? trimmed.calls + 1, calls],
    },
    // At most a quarter of the room after the head: with the half the window keeps, the call still fits.
    maxOutputTokens: Math.max(
      1,
      Math.min(facts.maxOutputTokens, SUMMARY_MAX_TOKENS, Math.floor(facts.roomAfterHead / SUMMARY_SHARE)),
    ),
    maxRetryDelayMs: config.retry.maximumIntervalMs,
  };
}

/**
 * The summary is written: it replaces the dropped turns (and any earlier summary) in the next call's
 * context, and the task's injections record it. Its tokens are counted by the run's spend.
 */
export function summaryWritten(cp: TaskCheckpoint, response: SummaryResponse): void {
  cp.summary = { ...response.summary };
  const [from, to] = response.summary.covers.calls;
  cp.injections.push({ tick: cp.ticks, kind: 'SUMMARY', text: `Summary of calls ${from}–${to}: ${response.text}` });
}

/** The summary call failed for good: the window drops the turns without one, and the injections say so. */
export function summaryFailed(cp: TaskCheckpoint, error: NormalizedError, request: SummaryInput): void {
  const [from, to] = request.covers.calls;
  cp.injections.push({
    tick: cp.ticks,
    kind: 'SUMMARY',
    text: `No summary of calls ${from}–${to}: the summary call failed (${error.code}: ${error.message}); they left the context without one.`,
  });
}

/** A summary as a delta or a summary request carries it (without the checkpoint's bookkeeping). */
export function storedSummary(s: NonNullable<TaskCheckpoint['summary']>): StoredSummary {
  const { sent: _sent, ...summary } = s;
  return summary;
}
