/**
 * A task's checkpoint (seeds: context anchoring; `admin:unlock --resume`): the anchored head, the system
 * prompt and the goal that no window ever trims, then the transcript; the injections the Core and the
 * guide add to it; and what a run hands on, bounded so it stays far below Temporal's payload limit. The
 * checkpoint is the plain data a resumed task, and a task that continues as new, starts from.
 */
import { cutStrings } from '../compact';
import type { AgentConfig } from '../config';
import type { Guide } from '../guides';
import type { Injection, TaskCheckpoint, ToolCallRecord } from '../types';

/** Entries anchored at the start of every context: the system prompt and the goal. */
export const ANCHORED = 2;

/** Tool calls and injections a task carries into its next run at most (the transcript keeps them all). */
export const CARRIED_RECORDS = 50;

/** A new task's checkpoint: the anchored system prompt and goal, nothing done yet. */
export function freshCheckpoint(
  guide: Guide,
  config: AgentConfig,
  goal: string,
  tools?: readonly string[],
): TaskCheckpoint {
  return {
    messages: [
      { role: 'system', text: guide.systemPrompt(config, tools) },
      { role: 'user', text: goal },
    ],
    ticks: 0,
    callNumber: 0,
    tokensUsed: 0,
    toolCalls: [],
    injections: [],
    verifyAsked: false,
  };
}

/** Something the Core or the guide tells the model: recorded as an injection and added to the context. */
export function inject(cp: TaskCheckpoint, tick: number, kind: Injection['kind'], text: string): void {
  cp.injections.push({ tick, kind, text });
  cp.messages.push({ role: 'user', text });
}

/**
 * The checkpoint a run hands on, with its oldest records dropped (the checkpoint keeps only the newest
 * too) and long strings cut; the messages are already bounded. Returns it and how many records it dropped.
 */
export function carried(cp: TaskCheckpoint): {
  checkpoint: TaskCheckpoint;
  dropped: { toolCalls: number; injections: number };
} {
  const toolCalls = cutStrings(cp.toolCalls.slice(-CARRIED_RECORDS)) as ToolCallRecord[];
  const injections = cutStrings(cp.injections.slice(-CARRIED_RECORDS)) as Injection[];
  const dropped = {
    toolCalls: cp.toolCalls.length - toolCalls.length,
    injections: cp.injections.length - injections.length,
  };
  cp.toolCalls = toolCalls;
  cp.injections = injections;
  return { checkpoint: { ...cp, messages: [...cp.messages] }, dropped };
}
