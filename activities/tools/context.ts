/**
 * What every tool receives besides its arguments: the workspace, the cancellation signal, a heartbeat,
 * the call's stable id and the tool settings. Built once per activity call in `index.ts`.
 */
import type { AgentConfig } from '../../core/config';
import type { SandboxLimits } from '../../core/worker-policy';
import type { ToolCallRef } from './call-journal';
import type { TenantSpace } from './disk';
import type { Workspace } from './sandbox';

/** The environment of one tool call. */
export interface ToolContext {
  /** Absolute workspace roots of the task; relative paths resolve against the first. */
  roots: string[];
  /** The same roots with their realpaths, looked up once for the call: confine every path with it. */
  workspace: Workspace;
  /**
   * Aborted when the call is cancelled (SYSTEM_HALT, the activity's timeout): stop, and let the
   * promise reject with `signal.reason` (or anything; the call counts as cancelled, not failed).
   */
  signal: AbortSignal;
  /** Time one attempt may take; a long-running tool stops itself before it. */
  timeoutMs: number;
  /**
   * Report progress (details shown in the Web UI's pending activity). The activity already heartbeats
   * while any tool runs, so calling this is optional.
   */
  heartbeat(details?: unknown): void;
  /**
   * The same for every attempt of this call and for no other call (workflow id, run, the call's place):
   * a side-effecting tool applies a retried call once by it (an idempotency key).
   */
  callId: string;
  /** The bytes of output the task allows (`tools.maxOutputBytes`); a larger result is refused. */
  maxOutputBytes: number;
  /**
   * The task's tool settings (the built-in tools read their allow-lists here), what its config leaves
   * unset filled in by this worker (`withWorkerDefaults`).
   */
  tools: AgentConfig['tools'] & { shellAllow: string[]; maxOutputBytes: number };
  /** The call's journal: the built-in side-effecting tools use it to apply a retried call once. */
  call?: ToolCallRef;
  /** Run `shell.run` programs as `nobody` (the worker runs as root and its policy does not allow root). */
  dropRoot?: boolean;
  /** The worker's resource limits of sandboxed programs and of the workspace (default: the policy's defaults). */
  limits?: SandboxLimits;
  /**
   * The space of the call's tenant, whose workspaces `limits.tenantBytes` bounds together (absent: a tool run outside
   * a worker, bounded by its workspace's cap alone).
   */
  space?: TenantSpace;
}
