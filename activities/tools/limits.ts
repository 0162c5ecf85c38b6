/**
 * The resource limits of sandboxed programs (core/worker-policy.ts `limits`; docs/ARCHITECTURE.md, "Trust
 * boundary"), on the host's side:
 *
 * - a cgroup per sandbox where the host lets the worker make one (cgroup v1's `pids` and `memory`
 *   hierarchies, or a cgroup v2 subtree with those controllers): an exact cap on the sandbox's processes
 *   and memory, and a record of which one was hit;
 * - rlimits always (`prlimit`): CPU time, file size, open files, no core dumps, and, where no cgroup does
 *   it, processes (per user, see `processLimit`) and memory (per process);
 * - the workspace's disk use (disk.ts), measured before, while and after a program runs.
 *
 * Cgroups are detected once per process; a host without writable ones is never an error: the rlimits hold.
 */
import { promises as fs, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { constants } from 'node:os';
import { describeLimit, isWithin, type LimitName, type SandboxLimits } from '../../core/worker-policy';
import { ToolError } from '../../core/errors/activity';

/** Where this worker makes its sandboxes' cgroups: one parent per controller (v1) or one for both (v2). */
export interface CgroupHost {
  version: 1 | 2;
  pids?: string;
  memory?: string;
}

let detected: Promise<CgroupHost | undefined> | undefined;

/** The cgroups this process may make for its sandboxes, detected once; undefined when there are none. */
export function cgroupHost(): Promise<CgroupHost | undefined> {
  return (detected ??= detectCgroups().catch(() => undefined));
}

interface Mount {
  root: string;
  point: string;
  fstype: string;
  options: string[];
}

/** /proc/self/mountinfo's cgroup mounts (`ID PARENT MAJ:MIN ROOT POINT OPTS [TAGS] - FSTYPE SOURCE SUPEROPTS`). */
function cgroupMounts(mountinfo: string): Mount[] {
  const unescape = (s: string) =>
    s.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  const mounts: Mount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    const fields = left?.split(' ') ?? [];
    const [fstype, , superOptions = ''] = right?.split(' ') ?? [];
    if (fstype !== 'cgroup' && fstype !== 'cgroup2') continue;
    mounts.push({
      root: unescape(fields[3] ?? '/'),
      point: unescape(fields[4] ?? ''),
      fstype,
      options: superOptions.split(','),
    });
  }
  return mounts;
}

/** The directory of cgroup `cgPath` under a mount (whose own root may be a subtree, as in containers). */
function dirOf(mount: Mount, cgPath: string): string | undefined {
  if (!isWithin(cgPath, mount.root)) return undefined;
  return path.resolve(mount.point, `.${cgPath.slice(mount.root === '/' ? 0 : mount.root.length)}`);
}

/**
 * The worker's own cgroup directories, from /proc/self/cgroup (`ID:CONTROLLERS:PATH`, v2's `0::PATH`)
 * and /proc/self/mountinfo: per v1 controller, and the v2 one. Where they can be used is probed after.
 *
 * ```ts
 * ownCgroups('4:memory:/a\n0::/\n', mountinfo) // { pids: undefined, memory: '/sys/fs/cgroup/memory/a', v2: '/sys/fs/cgroup/unified' }
 * ```
 */
export function ownCgroups(self: string, mountinfo: string): { pids?: string; memory?: string; v2?: string } {
  const mounts = cgroupMounts(mountinfo);
  const lines = self
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [id = '', controllers = '', ...rest] = l.split(':');
      return { id, controllers: controllers.split(','), path: rest.join(':') };
    });
  const v1 = (controller: string): string | undefined => {
    const line = lines.find((l) => l.controllers.includes(controller));
    const mount = mounts.find((m) => m.fstype === 'cgroup' && m.options.includes(controller));
    return line && mount ? dirOf(mount, line.path) : undefined;
  };
  const line = lines.find((l) => l.id === '0' && l.controllers.join('') === '');
  const mount = mounts.find((m) => m.fstype === 'cgroup2');
  return { pids: v1('pids'), memory: v1('memory'), v2: line && mount ? dirOf(mount, line.path) : undefined };
}

async function detectCgroups(): Promise<CgroupHost | undefined> {
  const [self, mountinfo] = await Promise.all([
    fs.readFile('/proc/self/cgroup', 'utf8'),
    fs.readFile('/proc/self/mountinfo', 'utf8'),
  ]);
  const own = ownCgroups(self, mountinfo);
  const v1: CgroupHost = { version: 1 };
  if (own.pids && (await probe(own.pids, 'pids.max', '64'))) v1.pids = own.pids;
  if (own.memory && (await probe(own.memory, 'memory.limit_in_bytes', '67108864'))) v1.memory = own.memory;
  if (v1.pids || v1.memory) return v1;
  return own.v2 ? delegatedV2(own.v2) : undefined;
}

/** True when a child cgroup can be made in `dir` and limited by writing `file`. */
async function probe(dir: string, file: string, value: string): Promise<boolean> {
  const child = path.join(dir, `starry-probe-${process.pid}`);
  try {
    await fs.mkdir(child);
  } catch {
    return false;
  }
  try {
    await fs.writeFile(path.join(child, file), value);
    return true;
  } catch {
    return false;
  } finally {
    await fs.rmdir(child).catch(() => undefined);
  }
}

/**
 * cgroup v2: sandboxes go below the worker's own cgroup once `pids` and `memory` are enabled for its
 * children. A cgroup with processes cannot enable them (v2's "no internal processes" rule), so the
 * worker first moves itself into a leaf `starry-worker`, as container runtimes do, but only when it is
 * alone in its cgroup: anyone else's processes are left where they are, and the rlimits do.
 */
async function delegatedV2(own: string): Promise<CgroupHost | undefined> {
  const read = (file: string) =>
    fs.readFile(path.join(own, file), 'utf8').then((t) => t.trim().split(/\s+/).filter(Boolean));
  const available = (await read('cgroup.controllers')).filter((c) => c === 'pids' || c === 'memory');
  if (!available.length) return undefined;
  const enabled = await read('cgroup.subtree_control');
  if (available.some((c) => !enabled.includes(c))) {
    const procs = await read('cgroup.procs');
    if (procs.some((pid) => pid !== String(process.pid))) return undefined;
    await fs.mkdir(path.join(own, 'starry-worker')).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    await fs.writeFile(path.join(own, 'starry-worker', 'cgroup.procs'), String(process.pid));
    await fs.writeFile(path.join(own, 'cgroup.subtree_control'), available.map((c) => `+${c}`).join(' '));
  }
  const host: CgroupHost = { version: 2 };
  if (available.includes('pids') && (await probe(own, 'pids.max', '64'))) host.pids = own;
  if (available.includes('memory') && (await probe(own, 'memory.max', '67108864'))) host.memory = own;
  return host.pids || host.memory ? host : undefined;
}

/** Cgroups of this worker's sandboxes that are in use (the reaper removes the others it made). */
const active = new Set<string>();
let made = 0;

/** One sandbox's cgroup(s): made before it starts, read and removed after it ends. */
export class SandboxCgroup {
  private constructor(
    private readonly host: CgroupHost,
    /** The directories the sandbox joins (one per v1 hierarchy, one on v2). */
    readonly dirs: string[],
  ) {}

  /** Make the cgroup(s) of a new sandbox, limited; undefined where the host has none (or `limits.cgroups` is false). */
  static async create(limits: SandboxLimits, owner: string, source: string): Promise<SandboxCgroup | undefined> {
    const host = limits.cgroups ? await cgroupHost() : undefined;
    if (!host) return undefined;
    const name = `starry-${owner}-${++made}`;
    const dirs: string[] = [];
    const cgroup = new SandboxCgroup(host, dirs);
    try {
      for (const parent of [...new Set([host.pids, host.memory].filter((d): d is string => d !== undefined))]) {
        const dir = path.join(parent, name);
        // In use before it exists: a reaper running meanwhile must not take it for a leftover.
        active.add(dir);
        dirs.push(dir);
        await fs.mkdir(dir);
        if (parent === host.pids) await fs.writeFile(path.join(dir, 'pids.max'), String(limits.processes));
        if (parent === host.memory) await cgroup.limitMemory(dir, limits.memoryBytes);
      }
    } catch (err) {
      await cgroup.remove();
      throw ToolError.of(
        {
          code: 'E_INTERNAL',
          kind: 'fatal',
          source,
          message: `${source} cannot make the cgroup of its sandbox: ${(err as Error).message}`,
        },
        { cause: err },
      );
    }
    return cgroup;
  }

  /** Whether it caps the sandbox's processes (else an rlimit must). */
  get capsProcesses(): boolean {
    return this.host.pids !== undefined;
  }

  /** Whether it caps the sandbox's memory (else an rlimit must). */
  get capsMemory(): boolean {
    return this.host.memory !== undefined;
  }

  /** Memory and swap (where the host accounts for it) both at `bytes`. */
  private async limitMemory(dir: string, bytes: number): Promise<void> {
    const write = (file: string, value: string) => fs.writeFile(path.join(dir, file), value);
    if (this.host.version === 1) {
      await write('memory.limit_in_bytes', String(bytes));
      await write('memory.memsw.limit_in_bytes', String(bytes)).catch(() => undefined);
    } else {
      await write('memory.max', String(bytes));
      await write('memory.swap.max', '0').catch(() => undefined);
    }
  }

  /** The limit the cgroup saw hit, if any: a refused fork (processes) or an OOM kill (memory). */
  async hit(): Promise<LimitName | undefined> {
    const counter = async (dir: string | undefined, file: string, key: string): Promise<number> => {
      if (!dir) return 0;
      const text = await fs.readFile(path.join(dir, file), 'utf8').catch(() => '');
      return Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    };
    const memoryDir = this.dirs.find((d) => this.host.memory !== undefined && path.dirname(d) === this.host.memory);
    const pidsDir = this.dirs.find((d) => this.host.pids !== undefined && path.dirname(d) === this.host.pids);
    if ((await counter(memoryDir, this.host.version === 1 ? 'memory.oom_control' : 'memory.events', 'oom_kill')) > 0)
      return 'memory';
    if ((await counter(pidsDir, 'pids.events', 'max')) > 0) return 'processes';
    return undefined;
  }

  /**
   * Remove the cgroup(s), killing what is left in them first (a sandbox's PID namespace ends with it, so little is).
   */
  async remove(): Promise<void> {
    await Promise.all(this.dirs.map((dir) => removeCgroup(dir)));
  }
}

async function removeCgroup(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      await fs.rmdir(dir);
      active.delete(dir);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        active.delete(dir);
        return;
      }
    }
    const pids = await fs.readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
    for (const pid of pids.split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  active.delete(dir); // busy for a second: the reaper tries again
}

/**
 * Remove the cgroups of sandboxes whose worker is gone (and this worker's own that nothing uses), killing
 * what is left in them. `alive(owner)` says whether a worker (`pid.starttime`) still runs.
 */
export async function reapCgroups(own: string, alive: (owner: string) => boolean): Promise<number> {
  const host = await cgroupHost();
  let removed = 0;
  for (const parent of new Set([host?.pids, host?.memory].filter((d): d is string => d !== undefined))) {
    const names = await fs.readdir(parent).catch((): string[] => []);
    for (const name of names) {
      const owner = /^starry-(\d+\.\d+)-\d+$/.exec(name)?.[1];
      const dir = path.join(parent, name);
      if (owner === undefined || (owner === own ? active.has(dir) : alive(owner))) continue;
      await removeCgroup(dir);
      removed++;
    }
  }
  return removed;
}

/**
 * The rlimits of a sandbox, as `prlimit` options. CPU: SIGXCPU at the limit, SIGKILL a second later. No
 * core files (SIGXCPU and SIGXFSZ would write them into the workspace).
 *
 * ```ts
 * rlimitArgs(limits, { fileSizeBytes: 1024, processes: 300, memory: true }) // ['--core=0', '--cpu=60:61', ...]
 * ```
 */
export function rlimitArgs(
  limits: SandboxLimits,
  o: { fileSizeBytes: number; processes?: number; memory: boolean },
): string[] {
  const args = [
    '--core=0',
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    `--fsize=${o.fileSizeBytes}:${o.fileSizeBytes}`,
    `--nofile=${limits.openFiles}:${limits.openFiles}`,
  ];
  if (o.processes !== undefined) args.push(`--nproc=${o.processes}:${o.processes}`);
  // Private writable memory per process: unlike the address space, it leaves runtimes that reserve much more than they
  // use alone.
  if (o.memory) args.push(`--data=${limits.memoryBytes}:${limits.memoryBytes}`);
  return args;
}

/**
 * RLIMIT_NPROC counts every process and thread of a user, and the kernel ignores it for root: as the
 * fallback of a missing pids cgroup it is set to what `uid` runs now plus `processes`, so it bounds this
 * sandbox about as the cgroup would while other sandboxes of the same user come and go.
 */
export async function processLimit(uid: number, processes: number): Promise<number> {
  let running = 0;
  const pids = (await fs.readdir('/proc').catch((): string[] => [])).filter((n) => /^\d+$/.test(n));
  for (const pid of pids) {
    const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1) === uid)
      running += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
  }
  return running + processes;
}

/**
 * The limit an ended sandbox's exit names: bwrap (and a shell) report a child killed by signal N as exit
 * code 128 + N, so SIGXCPU and SIGXFSZ reach us either way.
 */
export function limitOfExit(code: number | null, signal: string | null): 'cpu' | 'fileSize' | undefined {
  if (signal === 'SIGXCPU' || code === 128 + constants.signals.SIGXCPU) return 'cpu';
  if (signal === 'SIGXFSZ' || code === 128 + constants.signals.SIGXFSZ) return 'fileSize';
  return undefined;
}

/**
 * E_LIMIT (execution: the model can do less) naming the limit (by name, or described: a disk cap, disk.ts), with what
 * happened.
 *
 * ```ts
 * limitError('cpu', limits, 'shell.run', "'sh' was stopped at") // E_LIMIT: 'sh' was stopped at the CPU time limit (...)
 * ```
 */
export function limitError(
  name: LimitName | { limit: string; suggestion: string },
  limits: SandboxLimits,
  source: string,
  what: string,
  detail = '',
  o: { kind?: 'execution' | 'fatal'; suggestion?: string } = {},
): ToolError {
  const { limit, suggestion } = typeof name === 'string' ? describeLimit(name, limits) : name;
  return ToolError.of({
    code: 'E_LIMIT',
    kind: o.kind ?? 'execution',
    source,
    message: `E_LIMIT: ${what} ${limit}${detail}`,
    suggestion: o.suggestion ?? suggestion,
  });
}

/**
 * This process's start time in clock ticks since boot (field 22 of /proc/PID/stat), so a reused pid is not taken for
 * its predecessor.
 */
export function startTimeOf(pid: number | 'self', stat?: string): string | undefined {
  try {
    const text = stat ?? readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses); starttime is field 22.
    return text.slice(text.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}
