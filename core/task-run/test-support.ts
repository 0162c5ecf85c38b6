/**
 * What the collaborators' tests share: a parsed config (scripted model), a task's input, a new task's
 * checkpoint and books, the tool calls they make, and a JSON round trip (every collaborator's data is
 * plain, so it passes through workflow state and continue-as-new unchanged).
 */
import { parseAgentConfig, type AgentConfig, type AgentConfigInput } from '../config';
import { getGuide } from '../guides';
import type { LlmToolCall, TranscriptEntry } from '../llm';
import { initialCounters } from '../safety-counters';
import type { TaskCheckpoint } from '../types';
import { freshCheckpoint } from './checkpoint';
import { ContextWindow } from './context-window';
import { RunCounters } from './counters';
import { RunInbox } from './inbox';
import type { TaskRunInput } from './io';
import type { RunParts } from './output';
import { Spend } from './spend';

export const configOf = (config: AgentConfigInput = {}): AgentConfig => parseAgentConfig(config, 'scripted:x.json');

/** A task's input with the given config and overrides. */
export function inputOf(config: AgentConfigInput = {}, over: Partial<TaskRunInput> = {}): TaskRunInput {
  return {
    agentId: 'a1',
    taskId: 'task-1',
    goal: 'read notes.md',
    config: configOf(config),
    counters: initialCounters(),
    agentTokensUsed: 0,
    ...over,
  };
}

/** A new task's checkpoint: the pain guide's system prompt and the goal. */
export function checkpointOf(config: AgentConfig = configOf(), goal = 'read notes.md'): TaskCheckpoint {
  return freshCheckpoint(getGuide(config.guide), config, goal);
}

/** A valid call, and one that fails validation (unknown tool) with its fingerprint fixed by `arg`. */
export const read = (id: string, path = 'notes.md'): LlmToolCall => ({ id, name: 'fs.read', args: { path } });
export const bad = (id: string, arg = 'same'): LlmToolCall => ({ id, name: 'fs.nope', args: { arg } });

/** An entry's text (a stored entry has none: its content is in the transcript store). */
export const textOf = (m: TranscriptEntry | undefined): string | undefined => (m && 'text' in m ? m.text : undefined);

/** A value after a JSON round trip, as continue-as-new and workflow state hand it on. */
export const roundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** A run's books as the reports and the output read them, at tick 0 of a new task. */
export function partsOf(config: AgentConfigInput = {}, over: Partial<TaskRunInput> = {}, store = false): RunParts {
  const input = inputOf(config, over);
  const checkpoint = checkpointOf(input.config, input.goal);
  return {
    input,
    workflowId: 'agent-a1-task-1',
    checkpoint,
    counters: RunCounters.of(input, checkpoint),
    spend: Spend.of(input.continued),
    halted: false,
    traceId: undefined,
    inbox: RunInbox.of(input.messages, input.continued?.received),
    window: ContextWindow.of(store),
    tools: input.tools,
  };
}
