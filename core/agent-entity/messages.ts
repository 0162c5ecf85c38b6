/**
 * Human follow-ups to an agent (`message`): forwarded to the running task, up to `LIMITS.messagesPerRun`
 * a run, or kept for the next task, up to `LIMITS.pendingMessages`. A message is never dropped: one a task
 * did not show its LLM, or one that could not be forwarded, goes to the next run. Plain data in the
 * agent's `AgentData`; the functions change the part they are given.
 */
import { RefusedError } from '../errors';
import { LIMITS, type HumanMessage } from '../payloads';
import type { RunningTask } from './runs';

/** Messages that wait for the agent's next task. */
export interface MessagesData {
  pendingMessages: HumanMessage[];
}

/**
 * Why a human message is refused now (too many for the running task, or waiting), or nothing.
 *
 * @throws RefusedError saying what to do.
 */
export function refuseMessage(d: MessagesData, agentId: string, current: RunningTask | undefined): void {
  if (current && (current.messages ?? 0) >= LIMITS.messagesPerRun) {
    throw new RefusedError(
      `task ${current.task.taskId} has already received ${LIMITS.messagesPerRun} messages, the most one run takes: wait for it to end, or halt it`,
    );
  }
  if (!current && d.pendingMessages.length >= LIMITS.pendingMessages) {
    throw new RefusedError(
      `agent ${agentId} already holds ${d.pendingMessages.length} messages for its next task, the most it keeps: submit a task first`,
    );
  }
}

/**
 * Take a message (checked already): counted for the running task, whose workflow id is returned to
 * forward it to; kept for the next task when none runs.
 */
export function takeMessage(
  d: MessagesData,
  current: RunningTask | undefined,
  m: HumanMessage,
): { forwardTo?: string } {
  if (current) {
    current.messages = (current.messages ?? 0) + 1;
    return { forwardTo: current.workflowId };
  }
  d.pendingMessages.push(m);
  return {};
}

/** A message that could not be forwarded (the task had just closed): kept for the next run. */
export function keepMessage(d: MessagesData, m: HumanMessage): void {
  d.pendingMessages.push(m);
}

/** What a run did not show its LLM goes to the next one, ahead of what came since. */
export function keepUndelivered(d: MessagesData, undelivered: HumanMessage[] | undefined): void {
  if (undelivered?.length) d.pendingMessages = [...undelivered, ...d.pendingMessages];
}

/** The messages waiting for the next task, handed to it: none wait after. */
export function takePending(d: MessagesData): HumanMessage[] {
  return d.pendingMessages.splice(0);
}
