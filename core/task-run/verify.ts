/**
 * The final answer and its verification round (seeds: the forced check before a final answer): a first
 * answer without tool calls is met with one question, asking the model to check its work against the
 * goal, before the task completes; the config's `verify: false` turns it off. The round asks about an
 * answer already given, so the loop cap does not count it as a tick.
 */
import { verifyText } from '../transcript';
import type { TaskCheckpoint } from '../types';
import { inject } from './checkpoint';
import type { AnswerStep, TaskRunInput } from './io';

/** An answer without tool calls: the verification question when it is due, else the task completes with the answer's text. */
export function finalAnswer(
  cp: TaskCheckpoint,
  input: Pick<TaskRunInput, 'config' | 'goal'>,
  text: string | undefined,
): AnswerStep {
  if (askVerification(cp, input.config.verify, input.goal)) return { verify: true };
  const finalText = text !== undefined ? { finalText: text } : {};
  return { end: { outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ...finalText } };
}

/**
 * A final answer arrived: ask the verification question when it is due (recorded, so it is asked once a
 * task). Returns whether it was asked; otherwise the answer stands.
 */
export function askVerification(cp: TaskCheckpoint, verify: boolean, goal: string): boolean {
  if (!verify || cp.verifyAsked) return false;
  cp.verifyAsked = true;
  inject(cp, cp.ticks, 'VERIFY', verifyText(goal));
  return true;
}

/** True between the verification question and the model's answer to it. */
export function verifying(cp: TaskCheckpoint): boolean {
  const last = cp.injections.at(-1);
  return last?.kind === 'VERIFY' && last.tick === cp.ticks;
}
