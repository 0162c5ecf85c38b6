/**
 * What a task's files take on disk (docs/ARCHITECTURE.md, "Resource limits"): the one rule every path
 * that measures uses — `fs.write` before it writes, `shell.run` before, during and after a program, a
 * stdio MCP server after each call — and the decisions around it, for the two caps of the policy's
 * `limits`: `workspaceBytes` (one task's workspace roots) and `tenantBytes` (all the workspaces of a
 * tenant together: its space `<root>/<tenant>` under each root; a plain agent's space is the roots).
 * Pure: activities/tools/disk.ts measures and applies.
 */
import { describeLimit, formatBytes, type SandboxLimits } from './worker-policy';

/** The unit every entry counts in: the block of ext4 and xfs, and the page of tmpfs. */
export const DISK_BLOCK = 4096;

/**
 * What one entry below a workspace root counts against the caps: its apparent size rounded up to whole
 * 4 KiB blocks, and at least one block, whatever it is. An empty file, a directory, a symlink and a
 * fifo each take a block, as an inode and a directory's first block do on disk, so 100,000 `mkdir` are
 * 400 MB and not nothing; a directory grown large by its entries counts its own size. Apparent sizes
 * keep the count the same on every file system (a sparse file counts what it claims).
 *
 * ```ts
 * entryBytes(0)    // 4096: an empty file, a fifo, a symlink
 * entryBytes(4096) // 4096: a directory on ext4
 * entryBytes(4097) // 8192
 * ```
 */
export function entryBytes(size: number): number {
  return Math.max(1, Math.ceil(size / DISK_BLOCK)) * DISK_BLOCK;
}

/**
 * What writing a file adds: the file's new count less its old one, and a block for each directory the
 * write creates on the way (`fs.write` makes missing parents). Negative when it shrinks the file.
 *
 * ```ts
 * writeGrowth({ size: 0, newDirs: 3 })           // 16384: an empty file three new directories deep
 * writeGrowth({ existing: 9000, size: 10 })      // -8192
 * ```
 */
export function writeGrowth(o: { existing?: number; size: number; newDirs: number }): number {
  const before = o.existing === undefined ? 0 : entryBytes(o.existing);
  return entryBytes(o.size) - before + o.newDirs * entryBytes(0);
}

/**
 * Whether a change took a total over its cap: only a change that grew it past the cap does, so a
 * workspace already over may still shrink, and a program that only reads in it is not stopped.
 *
 * ```ts
 * grewOver(900, 1100, 1000)  // true
 * grewOver(1500, 1200, 1000) // false: over, but smaller than before
 * ```
 */
export function grewOver(before: number, after: number, cap: number): boolean {
  return after > cap && after > before;
}

/** The two caps: a task's workspace, and its tenant's space. */
export type DiskCap = 'workspace' | 'tenant';

/**
 * The cap a write of `growth` bytes would break, or undefined: the workspace's first (it is the one the
 * task can act on), then the tenant's. A write that does not grow anything breaks none.
 *
 * ```ts
 * capBroken({ workspace: 900, tenant: 5000, growth: 200 }, limits) // 'workspace' when workspaceBytes is 1000
 * ```
 */
export function capBroken(
  o: { workspace: number; tenant?: number; growth: number },
  limits: Pick<SandboxLimits, 'workspaceBytes' | 'tenantBytes'>,
): DiskCap | undefined {
  if (o.growth <= 0) return undefined;
  if (o.workspace + o.growth > limits.workspaceBytes) return 'workspace';
  if (o.tenant !== undefined && o.tenant + o.growth > limits.tenantBytes) return 'tenant';
  return undefined;
}

/** What a file system's counters say is in use (statfs): bytes of its blocks and its inodes. */
export interface FsCounts {
  usedBytes: number;
  usedFiles: number;
}

/**
 * How much a file system grew between two readings, in the rule's terms: the blocks it took, and a
 * block for each inode (an empty file or a directory's inode takes one in the rule). An overestimate
 * on purpose (a directory is an inode and a block): it only decides when to measure.
 *
 * ```ts
 * fsGrowth({ usedBytes: 0, usedFiles: 0 }, { usedBytes: 4096, usedFiles: 1 }) // 8192: one mkdir
 * ```
 */
export function fsGrowth(from: FsCounts, to: FsCounts): number {
  return to.usedBytes - from.usedBytes + (to.usedFiles - from.usedFiles) * DISK_BLOCK;
}

/** A tenant space's total as a worker knows it: measured at `measuredAt`, plus what its own calls added since. */
export interface KnownTotal {
  bytes: number;
  measuredAt: number;
}

/**
 * How long a worker trusts a space's total: past `ttlMs` a call uses it and measures again meanwhile;
 * a refusal is decided on a measure at most `freshMs` old.
 */
export const SPACE_TOTAL_AGE = { ttlMs: 30_000, freshMs: 5_000 };

/**
 * What a call does with the total it knows of a space: `measure` it first (none known, or a refusal
 * about to be decided on an older one), `use` it, or use it and `refresh` it meanwhile (older than the
 * TTL). `need` is `confirm` when the total would refuse the call: a refusal is never decided on a stale
 * total, since another worker's task may have removed files since.
 *
 * ```ts
 * totalPlan(undefined, now, 'estimate')                            // 'measure'
 * totalPlan({ bytes: 1, measuredAt: now - 60_000 }, now, 'estimate') // 'refresh'
 * totalPlan({ bytes: 1, measuredAt: now - 10_000 }, now, 'confirm')  // 'measure'
 * ```
 */
export function totalPlan(
  known: KnownTotal | undefined,
  now: number,
  need: 'estimate' | 'confirm',
  age: { ttlMs: number; freshMs: number } = SPACE_TOTAL_AGE,
): 'measure' | 'use' | 'refresh' {
  if (known === undefined) return 'measure';
  const old = now - known.measuredAt;
  if (need === 'confirm' && old > age.freshMs) return 'measure';
  return old > age.ttlMs ? 'refresh' : 'use';
}

/**
 * A cap as an E_LIMIT message names it, what holds the bytes, and what the model can do. The
 * workspace's is `describeLimit('disk')`'s.
 *
 * ```ts
 * describeDiskCap('tenant', limits, 'acme').limit
 * // "the tenant's disk limit (limits.tenantBytes: 10240 MiB for all the workspaces of tenant acme together)"
 * ```
 */
export function describeDiskCap(
  cap: DiskCap,
  limits: SandboxLimits,
  tenant: string | undefined,
): { limit: string; suggestion: string; holder: string } {
  if (cap === 'workspace') return { ...describeLimit('disk', limits), holder: 'the workspace' };
  const bytes = formatBytes(limits.tenantBytes);
  if (tenant === undefined)
    return {
      limit: `the disk limit of the worker's roots (limits.tenantBytes: ${bytes} for all the workspaces under them together)`,
      suggestion:
        "Remove files this task or another agent's no longer needs; the worker's operator can raise limits.tenantBytes.",
      holder: "the workspaces under the worker's roots",
    };
  return {
    limit: `the tenant's disk limit (limits.tenantBytes: ${bytes} for all the workspaces of tenant ${tenant} together)`,
    suggestion: `Remove files this task or another agent of tenant ${tenant} no longer needs; the worker's operator can raise limits.tenantBytes.`,
    holder: `the workspaces of tenant ${tenant}`,
  };
}
