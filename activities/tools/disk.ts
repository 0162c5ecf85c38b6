/**
 * The disk a task's files take (core/disk.ts's rule), on the host's side: measuring a tree, each tenant
 * space's total as this worker knows it, and the checks `fs.write`, `shell.run` and stdio MCP calls make
 * around what they do (docs/ARCHITECTURE.md, "Resource limits").
 */
import { closeSync, constants, lstatSync, openSync, readdirSync, statfsSync, type Dirent, type Stats } from 'node:fs';
import {
  SPACE_TOTAL_AGE,
  DISK_BLOCK,
  capBroken,
  describeDiskCap,
  entryBytes,
  fsGrowth,
  grewOver,
  totalPlan,
  type DiskCap,
  type FsCounts,
  type KnownTotal,
} from '../../core/disk';
import { isWithin, type SandboxLimits } from '../../core/worker-policy';
import { ToolError, nodeCode } from '../../core/errors/activity';
import { limitError } from './limits';

/** What a tree holds by the rule. */
export interface TreeUsage {
  /** The entries' count in bytes: a lower bound when the walk stopped early. */
  bytes: number;
  entries: number;
  /** False when the walk stopped early (over `stopAbove`, or past `maxEntries`). */
  complete: boolean;
}

/** The fewest entries a workspace walk may visit before it stops. */
const MIN_WALK = 200_000;
/** Entries looked at between two turns of the event loop (a few milliseconds of work). */
const WALK_SLICE = 1000;
/**
 * A directory whose path is longer is walked through a descriptor of its own: a tree may be deeper than
 * PATH_MAX, and a short path keeps each lookup cheap at any depth.
 */
const LONG_PATH = 512;

/**
 * The entries a walk of a workspace capped at `cap` visits at most: twice what the cap can hold (every
 * entry counts a block at least), and 200,000 at least. A walk that passes it has found the workspace
 * over its cap (a walk that must see every file, for hard links, refuses instead).
 */
export function walkBound(cap: number): number {
  return Math.max(MIN_WALK, 2 * Math.ceil(cap / DISK_BLOCK));
}

/** A directory being walked: its listing, and the descriptor it is reached through when its path is long. */
interface Frame {
  path: string;
  entries: Dirent[];
  next: number;
  fd?: number;
}

/** A directory to walk; `anchor`: reached through a descriptor of its own whatever its path's length. */
function openFrame(dir: string, anchor: boolean): Frame | undefined {
  let fd: number | undefined;
  let at = dir;
  try {
    if (anchor || dir.length > LONG_PATH) {
      fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      at = `/proc/self/fd/${fd}`;
    }
    return {
      path: at,
      entries: readdirSync(at, { withFileTypes: true }),
      next: 0,
      ...(fd !== undefined ? { fd } : {}),
    };
  } catch (err) {
    if (fd !== undefined) closeSync(fd);
    // Out of descriptors: refused rather than a subtree left uncounted.
    if (['EMFILE', 'ENFILE'].includes(nodeCode(err) ?? '')) throw err;
    return undefined; // gone, or not ours to read: nothing to count
  }
}

function closeFrame(frame: Frame): void {
  if (frame.fd !== undefined) closeSync(frame.fd);
}

/** `roots` without those inside another: a root inside another is walked once. */
function outermost(roots: string[]): string[] {
  return roots.filter((r, i) => !roots.some((other, j) => j !== i && isWithin(r, other) && (r !== other || j < i)));
}

/**
 * What the entries below `roots` count together (core/disk.ts `entryBytes`; the roots themselves are
 * not counted). Synchronous calls in slices, so the event loop still turns (100,000 entries in about
 * 0.4 s). A tree deeper than PATH_MAX is walked through descriptors, so no depth hides anything.
 * `stopAbove` stops once the count passes it; `maxEntries` once that many were seen. With
 * `refuseHardlinks`, a hard-linked file is refused: it is the outside file itself, which no mount
 * namespace hides, so no program runs beside one (fs tools refuse such files one by one); such a walk
 * must see every file, so past `maxEntries` it is refused as too large. `entriesOnly` counts a block an
 * entry without looking at sizes (no `lstat`): a lower bound of the count, about ten times as fast.
 *
 * @throws ToolError EPERM for a hard link, E_INTERNAL fatal for a hard-link walk past `maxEntries`.
 */
export async function measureTree(
  roots: string[],
  o: { source: string; refuseHardlinks?: boolean; stopAbove?: number; maxEntries?: number; entriesOnly?: boolean },
): Promise<TreeUsage> {
  const usage: TreeUsage = { bytes: 0, entries: 0, complete: true };
  const stack: Frame[] = [];
  let slice = 0;
  try {
    for (const root of outermost(roots)) {
      const top = openFrame(root, false);
      if (top) stack.push(top);
      while (stack.length) {
        const frame = stack[stack.length - 1]!;
        const entry = frame.entries[frame.next++];
        if (entry === undefined) {
          closeFrame(stack.pop()!);
          continue;
        }
        usage.entries++;
        const full = `${frame.path}/${entry.name}`;
        const sized = !o.entriesOnly && (entry.isDirectory() || entry.isFile());
        const stat = sized ? lstatOrUndefined(full) : undefined;
        usage.bytes += entryBytes(stat?.size ?? 0);
        if (stat?.isFile() && o.refuseHardlinks && stat.nlink > 1) throw hardLinkRefusal(o.source, frame, full);
        if (o.entriesOnly ? entry.isDirectory() : stat?.isDirectory()) {
          // A directory whose last entry this is has nothing left to read: it leaves the stack, its
          // descriptor handed down as the child's own, so a chain of any depth holds one at a time.
          const done = frame.next >= frame.entries.length;
          const inner = openFrame(full, done && frame.fd !== undefined);
          if (done) closeFrame(stack.pop()!);
          if (inner) stack.push(inner);
        }
        if (usage.bytes > (o.stopAbove ?? Infinity) || usage.entries > (o.maxEntries ?? Infinity)) {
          if (o.refuseHardlinks && usage.entries > (o.maxEntries ?? Infinity)) throw tooLargeToWalk(o.source, usage);
          usage.complete = false;
          return usage;
        }
        if (++slice >= WALK_SLICE) {
          slice = 0;
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    }
    return usage;
  } finally {
    for (const frame of stack) closeFrame(frame);
  }
}

function lstatOrUndefined(file: string): Stats | undefined {
  try {
    return lstatSync(file);
  } catch {
    return undefined; // removed meanwhile
  }
}

function hardLinkRefusal(source: string, frame: Frame, full: string): ToolError {
  const shown = frame.fd === undefined ? full : `…/${full.slice(frame.path.length + 1)}`;
  return ToolError.of({
    code: 'EPERM',
    source,
    message: `EPERM: operation not permitted, the workspace holds a hard-linked file ('${shown}'), which may be a file outside it`,
    suggestion: 'Programs do not run while the workspace has hard links; fs.read and fs.write work on other files.',
  });
}

function tooLargeToWalk(source: string, usage: TreeUsage): ToolError {
  return ToolError.of({
    code: 'E_INTERNAL',
    kind: 'fatal',
    source,
    message: `${source} looks at every file of the workspace for hard links before a program runs, and the workspace has more than ${usage.entries - 1} entries (${usage.bytes} bytes)`,
    suggestion: 'Remove files from the workspace, or use a smaller workspace root for this agent.',
  });
}

// ---- A tenant space's total, as this worker knows it ----

/**
 * The totals of tenant spaces this worker has measured, each kept up to date with what its own calls
 * add (`add`), measured again past its TTL while calls go on, and measured fresh before a refusal
 * (core/disk.ts `totalPlan`). Other workers' writes show at the next measure. Bounded: the spaces used
 * least recently are forgotten first.
 */
export class SpaceTotals {
  private readonly known = new Map<string, KnownTotal>();
  private readonly measuring = new Map<string, Promise<void>>();

  constructor(
    private readonly age = SPACE_TOTAL_AGE,
    private readonly max = 1000,
  ) {}

  /** What `roots` hold, by the plan (a count past `cap` may stop at it: the space is over). */
  async total(roots: string[], cap: number, need: 'estimate' | 'confirm'): Promise<number> {
    const key = roots.join('\0');
    const known = this.known.get(key);
    const plan = totalPlan(known, Date.now(), need, this.age);
    if (plan === 'measure') await this.measure(key, roots, cap);
    else if (plan === 'refresh') this.measure(key, roots, cap).catch(() => undefined);
    const now = this.known.get(key);
    if (now) {
      this.known.delete(key); // most recently used last
      this.known.set(key, now);
    }
    return now?.bytes ?? 0;
  }

  /** Count `bytes` more (or fewer) in a space this worker knows. */
  add(roots: string[], bytes: number): void {
    const known = this.known.get(roots.join('\0'));
    if (known) known.bytes += bytes;
  }

  private measure(key: string, roots: string[], cap: number): Promise<void> {
    let pending = this.measuring.get(key);
    if (!pending) {
      const startedAt = Date.now();
      pending = measureTree(roots, { source: 'disk', stopAbove: cap })
        .then((usage) => {
          this.known.delete(key);
          this.known.set(key, { bytes: usage.bytes, measuredAt: startedAt });
          while (this.known.size > this.max) this.known.delete(this.known.keys().next().value!);
        })
        .finally(() => this.measuring.delete(key));
      this.measuring.set(key, pending);
    }
    return pending;
  }
}

/** This worker's totals, shared by every call. */
const spaceTotals = new SpaceTotals();

// ---- The checks around a call ----

/** A tenant's space: where all its workspaces lie (`tenantRoots(policy.roots, tenant)`), bounded together. */
export interface TenantSpace {
  roots: string[];
  /** Absent: a plain agent, whose space is the roots themselves. */
  tenant?: string;
}

/** What a call's disk checks need: its workspace, the limits, its tenant's space (absent outside a worker). */
export interface DiskScope {
  /** Real paths of the task's workspace roots. */
  roots: string[];
  limits: SandboxLimits;
  space?: TenantSpace;
  /** The error source: `fs.write`, `shell.run`, `<server>.<tool>`. */
  source: string;
}

/** A cap a total went over, and the total (`atLeast`: more than `bytes`, a walk stopped there). */
export interface DiskOver {
  cap: DiskCap;
  bytes: number;
  atLeast?: boolean;
}

/**
 * E_LIMIT naming a disk cap: `<what> <the limit><detail>`.
 *
 * ```ts
 * capError(scope, 'tenant', "'sh' hit") // "E_LIMIT: 'sh' hit the tenant's disk limit (limits.tenantBytes: …)"
 * ```
 */
export function capError(scope: DiskScope, cap: DiskCap, what: string, detail = ''): ToolError {
  return limitError(describeDiskCap(cap, scope.limits, scope.space?.tenant), scope.limits, scope.source, what, detail);
}

/**
 * E_LIMIT for a total over its cap: `<lead> <holder> hold(s) <bytes> bytes, over <the limit><detail>`.
 *
 * ```ts
 * overError(scope, { cap: 'workspace', bytes: 9000 }, "after 'sh' ran,") // "E_LIMIT: after 'sh' ran, the workspace holds 9000 bytes, over …"
 * ```
 */
export function overError(scope: DiskScope, over: DiskOver, lead: string, detail = ''): ToolError {
  const { holder } = describeDiskCap(over.cap, scope.limits, scope.space?.tenant);
  const holds = over.cap === 'workspace' ? 'holds' : 'hold';
  const bytes = `${over.atLeast ? 'more than ' : ''}${over.bytes}`;
  return capError(scope, over.cap, `${lead} ${holder} ${holds} ${bytes} bytes, over`, detail);
}

/**
 * Refuse a write that would grow the workspace or its tenant's space past its cap (E_LIMIT naming the
 * cap); otherwise count its growth in the space's total at once, so the calls after it see it, and
 * return what takes it back when the write fails.
 *
 * @throws ToolError E_LIMIT naming the cap the write would break.
 */
export async function reserveWrite(
  scope: DiskScope,
  o: { growth: number; what: string; bytes: number },
): Promise<() => void> {
  const { limits, space } = scope;
  if (o.growth <= 0) return () => undefined;
  const ws = await measureTree(scope.roots, { source: scope.source, maxEntries: walkBound(limits.workspaceBytes) });
  const total = (need: 'estimate' | 'confirm') =>
    space ? spaceTotals.total(space.roots, limits.tenantBytes, need) : Promise.resolve(undefined);
  let tenant = await total('estimate');
  let broken = capBroken({ workspace: ws.bytes, tenant, growth: o.growth }, limits);
  if (broken === 'tenant') {
    tenant = await total('confirm');
    broken = capBroken({ workspace: ws.bytes, tenant, growth: o.growth }, limits);
  }
  if (broken) {
    const before = broken === 'workspace' ? ws.bytes : tenant!;
    const { holder } = describeDiskCap(broken, limits, space?.tenant);
    const from = `${before}${broken === 'workspace' && !ws.complete ? ' bytes or more' : ''}`;
    throw capError(
      scope,
      broken,
      `${o.what} (${o.bytes} bytes) would take ${holder} from ${from} to ${before + o.growth} bytes, over`,
    );
  }
  if (!space) return () => undefined;
  spaceTotals.add(space.roots, o.growth);
  return () => spaceTotals.add(space.roots, -o.growth);
}

/** How often a running program's file system is looked at (a statfs: microseconds). */
const WATCH_MS = 25;

/** The used blocks and inodes of the file systems of `roots`, or undefined where statfs cannot tell. */
function fsCounts(roots: string[]): FsCounts | undefined {
  try {
    const counts = { usedBytes: 0, usedFiles: 0 };
    for (const root of outermost(roots)) {
      const s = statfsSync(root);
      counts.usedBytes += (s.blocks - s.bfree) * s.bsize;
      counts.usedFiles += s.files - s.ffree;
    }
    return counts;
  } catch {
    return undefined;
  }
}

/**
 * The disk of a workspace across a program's run or a server's calls: measured when it opens (hard
 * links refused, for a program), then by `check` after each run or call, each change counted in the
 * tenant space's total; `watch` stops a program that grows it past a cap while it runs.
 */
export class WorkspaceDisk {
  /** What the workspace held at the start of the run (or after the last call): a cap is broken by growth since. */
  private mark: number;

  private constructor(
    readonly scope: DiskScope,
    /** What the workspace held at the last measure: the changes counted in the space's total are from it. */
    private usage: number,
  ) {
    this.mark = usage;
  }

  /**
   * Measure the workspace before a program (or a server) runs in it.
   *
   * @throws ToolError EPERM for a hard link, E_INTERNAL fatal for a workspace too large to look at.
   */
  static async open(scope: DiskScope): Promise<WorkspaceDisk> {
    const { bytes } = await measureTree(scope.roots, {
      source: scope.source,
      refuseHardlinks: true,
      maxEntries: walkBound(scope.limits.workspaceBytes),
    });
    return new WorkspaceDisk(scope, bytes);
  }

  /** What a program may add before it meets a cap: the smaller of the workspace's room and the space's, and whose. */
  async room(): Promise<{ bytes: number; cap: DiskCap }> {
    const { limits, space } = this.scope;
    const ws = limits.workspaceBytes - this.usage;
    const tenant = space
      ? limits.tenantBytes - (await spaceTotals.total(space.roots, limits.tenantBytes, 'estimate'))
      : Infinity;
    return tenant < ws ? { bytes: Math.max(0, tenant), cap: 'tenant' } : { bytes: Math.max(0, ws), cap: 'workspace' };
  }

  /**
   * Measure the workspace again and count the change in the space's total; the cap it grew past since
   * the run began (or the last settled call), if any, the tenant's confirmed by a fresh measure of the
   * space. `settle` ends the run: the next check counts from here (an MCP server's next call).
   */
  async check(settle = false): Promise<DiskOver | undefined> {
    const { limits, space, roots, source } = this.scope;
    const now = await measureTree(roots, { source, maxEntries: walkBound(limits.workspaceBytes) });
    const [counted, mark] = [this.usage, this.mark];
    this.usage = now.bytes;
    if (settle) this.mark = now.bytes;
    if (space && now.bytes !== counted) spaceTotals.add(space.roots, now.bytes - counted);
    if (grewOver(mark, now.bytes, limits.workspaceBytes)) return { cap: 'workspace', bytes: now.bytes };
    if (!space || now.bytes <= mark) return undefined;
    const estimate = await spaceTotals.total(space.roots, limits.tenantBytes, 'estimate');
    if (estimate <= limits.tenantBytes) return undefined;
    const confirmed = await spaceTotals.total(space.roots, limits.tenantBytes, 'confirm');
    return confirmed > limits.tenantBytes ? { cap: 'tenant', bytes: confirmed } : undefined;
  }

  /**
   * The workspace's cap broken by its entries alone (a block each, no sizes looked at): a flood of
   * entries is stopped without waiting for a full measure, while it goes on.
   */
  private async quickCheck(): Promise<DiskOver | undefined> {
    const { roots, source, limits } = this.scope;
    const above = Math.max(limits.workspaceBytes, this.mark);
    const quick = await measureTree(roots, { source, entriesOnly: true, stopAbove: above }).catch(() => undefined);
    return quick && !quick.complete ? { cap: 'workspace', bytes: above, atLeast: true } : undefined;
  }

  /**
   * Watch the file system while a program runs: when its counters (statfs) grew by the room left, the
   * workspace's entries are counted (`quickCheck`), then it is measured (`check`), and a growth past a
   * cap settles `over` with the E_LIMIT that stops the program. The counters are the whole file system's: another writer only costs a measure. Where
   * statfs cannot tell, nothing is watched and the measure after the run decides.
   */
  watch(room: number, lead: string): { over: Promise<ToolError>; stop(): void } {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let settle: (err: ToolError) => void = () => undefined;
    const over = new Promise<ToolError>((resolve) => (settle = resolve));
    let base = fsCounts(this.scope.roots);
    let left = room;
    const schedule = (ms: number) => {
      timer = setTimeout(() => void tick().catch(() => undefined), ms).unref();
    };
    const tick = async (): Promise<void> => {
      const counts = fsCounts(this.scope.roots);
      if (stopped || !counts || !base) return;
      let wait = WATCH_MS;
      const grown = fsGrowth(base, counts);
      if (grown >= Math.max(left, 1)) {
        const started = Date.now();
        const before = this.usage;
        const found = (await this.quickCheck()) ?? (await this.check().catch(() => undefined));
        if (stopped) return;
        if (found) return settle(overError(this.scope, found, lead));
        base = fsCounts(this.scope.roots);
        left = (await this.room()).bytes;
        // Growth that was not the workspace's (another writer on the file system) is not measured over
        // and over: then at most a fifth of the time goes to measuring.
        if (this.usage - before < grown / 4) wait = Math.max(WATCH_MS, 4 * (Date.now() - started));
      }
      schedule(wait);
    };
    if (base) schedule(WATCH_MS);
    return {
      over,
      stop: () => {
        stopped = true;
        clearTimeout(timer);
      },
    };
  }
}
