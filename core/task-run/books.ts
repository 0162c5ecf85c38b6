/**
 * A task run's books: its collaborators, each over plain data, and the facts of the run they read (the
 * task's input, its checkpoint, the guide, whether a halt arrived, the trace, the tools offered), made
 * from the task workflow's input. One object for the whole run, handed to each step.
 */
import { getGuide } from '../guides';
import { freshCheckpoint } from './checkpoint';
import { ContextWindow } from './context-window';
import { RunCounters } from './counters';
import { RunInbox } from './inbox';
import type { TaskRunInput } from './io';
import { offeredNames } from './offer';
import type { RunParts } from './output';
import { Spend } from './spend';
import { TelemetryBuffer } from './telemetry-buffer';
import type { TurnBooks } from './turn';

export type RunBooks = RunParts & TurnBooks;

/**
 * A run's books: a new task starts from the anchored head (its system prompt naming the tools listed,
 * when they are), a resumed one from its checkpoint; a run that continued as new takes over what the
 * run before it counted.
 */
export function booksOf(input: TaskRunInput, workflowId: string, store: boolean): RunBooks {
  const { config, tools, continued } = input;
  const guide = getGuide(config.guide);
  const checkpoint =
    input.checkpoint ??
    freshCheckpoint(
      guide,
      config,
      input.goal,
      tools?.map((t) => t.name),
    );
  return {
    input,
    workflowId,
    checkpoint,
    config,
    guide,
    halted: false,
    traceId: undefined,
    counters: RunCounters.of(input, checkpoint),
    spend: Spend.of(continued),
    inbox: RunInbox.of(input.messages, continued?.received),
    window: ContextWindow.of(store),
    telemetry: new TelemetryBuffer(),
    tools,
    offered: offeredNames(tools, config),
  };
}
