/**
 * What every tool implementation receives besides its arguments: the workspace, the tool settings, the
 * time allowed and the cancellation signal. Built once per activity call in `index.ts`.
 */
import type { AgentConfig } from '../../core/config';
import type { ToolCallRef } from './call-journal';

/** The environment of one tool call. */
export interface ToolContext {
  /** Absolute workspace roots; relative paths resolve against the first. */
  roots: string[];
  tools: AgentConfig['tools'];
  /** Time one attempt may take; long-running tools stop themselves before it. */
  timeoutMs: number;
  /** Aborted when the activity is cancelled (SYSTEM_HALT); tools stop and rethrow its reason. */
  signal?: AbortSignal;
  /** The call's stable id and journal: side-effecting tools use it to apply a retried call once. */
  call?: ToolCallRef;
  /** Run `shell.run` programs as `nobody` (the worker runs as root and its policy does not allow root). */
  dropRoot?: boolean;
}
