/**
 * The sandbox's resource limits (issue 30): what every sandboxed program (`shell.run`, stdio MCP servers)
 * and a task's workspace may use, set by the worker's operator for every task, and how an E_LIMIT names
 * the one a program hit.
 */
import { z } from 'zod';

const MiB = 1024 * 1024;

/**
 * The resource limits of every sandboxed program (`shell.run`, stdio MCP servers) and of a task's
 * workspace. A task's config has no knob for them: the operator's values apply to every task.
 */
export const SandboxLimitsSchema = z
  .object({
    /** Processes and threads a sandbox may hold at once. */
    processes: z.number().int().min(8).max(65_536).default(256),
    /** Memory of a sandbox (its processes and its /tmp together, where cgroups count it). */
    memoryBytes: z
      .number()
      .int()
      .min(16 * MiB)
      .default(1024 * MiB),
    /** CPU time of each process (an MCP server's over its life). */
    cpuSeconds: z.number().int().min(1).max(86_400).default(60),
    /** The largest file a program may write. */
    fileSizeBytes: z
      .number()
      .int()
      .min(1)
      .default(256 * MiB),
    /** Files a process may have open at once. */
    openFiles: z.number().int().min(16).max(1_048_576).default(1024),
    /** The size of the sandbox's private /tmp; 0: a read-only, empty /tmp. */
    tmpBytes: z
      .number()
      .int()
      .min(0)
      .default(64 * MiB),
    /**
     * What a task's workspace roots may hold together, in bytes: every file, directory and other entry below
     * them, each its apparent size rounded up to 4 KiB blocks, at least one (core/disk.ts `entryBytes`).
     */
    workspaceBytes: z
      .number()
      .int()
      .min(1)
      .default(1024 * MiB),
    /**
     * What all the workspaces of one tenant may hold together, counted the same way: its space `<root>/<tenant>`
     * under each root (a plain agent's: everything under the roots), so a new agent id is not new room.
     */
    tenantBytes: z
      .number()
      .int()
      .min(1)
      .default(10 * 1024 * MiB),
    /**
     * Use cgroups where the host lets the worker create them (exact process and memory limits); false: rlimits only.
     */
    cgroups: z.boolean().default(true),
  })
  .strict();

export type SandboxLimits = z.output<typeof SandboxLimitsSchema>;

/** The limits of a worker whose policy says nothing about them. */
export const DEFAULT_LIMITS: SandboxLimits = SandboxLimitsSchema.parse({});

/**
 * The limits a sandboxed program can be seen to hit (E_LIMIT names one); /tmp and open files show as the program's own
 * ENOSPC and EMFILE.
 */
export type LimitName = 'processes' | 'memory' | 'cpu' | 'fileSize' | 'disk';

/**
 * A limit as an E_LIMIT message names it (with its policy field and value) and what the model can do.
 *
 * ```ts
 * describeLimit('cpu', DEFAULT_LIMITS).limit // 'the CPU time limit (limits.cpuSeconds: 60 s per process)'
 * ```
 */
export function describeLimit(name: LimitName, limits: SandboxLimits): { limit: string; suggestion: string } {
  switch (name) {
    case 'processes':
      return {
        limit: `the process limit (limits.processes: ${limits.processes} processes and threads at once)`,
        suggestion: 'Run fewer processes at once: no background jobs, less parallelism.',
      };
    case 'memory':
      return {
        limit: `the memory limit (limits.memoryBytes: ${formatBytes(limits.memoryBytes)})`,
        suggestion: 'Use less memory: work on less data at a time.',
      };
    case 'cpu':
      return {
        limit: `the CPU time limit (limits.cpuSeconds: ${limits.cpuSeconds} s per process)`,
        suggestion: 'Do less work per call, or split the work into smaller steps.',
      };
    case 'fileSize':
      return {
        limit: `the file size limit (limits.fileSizeBytes: ${formatBytes(limits.fileSizeBytes)} per file)`,
        suggestion: 'Write smaller files, or split the output across files.',
      };
    case 'disk':
      return {
        limit: `the workspace's disk limit (limits.workspaceBytes: ${formatBytes(limits.workspaceBytes)} for all its files and directories)`,
        suggestion: 'Remove files the task no longer needs, or write less.',
      };
  }
}

/** `64 MiB`, `512 KiB` or `1000 bytes`: a size as an operator wrote it. */
export function formatBytes(n: number): string {
  if (n >= MiB && n % MiB === 0) return `${n / MiB} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}
