/**
 * The confinement every program a tool starts runs in (`shell.run`'s commands, stdio MCP servers):
 * bubblewrap (`bwrap`, Debian package `bubblewrap`, installed by scripts/setup.sh) builds a mount namespace
 * holding only the system's programs (read-only), a fresh /proc and /dev, a private /tmp of bounded size,
 * the workspace roots and, for an MCP server, the read-only directories its policy entry names. Outside
 * files are not there to reach, whatever the arguments or the environment say (symlinks out,
 * `-f/etc/passwd`, `/proc/$PPID/environ`, `NODE_OPTIONS=--require`). No network unless the policy grants
 * it, its own PID namespace, resource limits (limits.ts), and `--die-with-parent`: a SIGKILLed worker
 * takes its programs with it. bwrap binds the sandbox's init to the worker only once its setup is done,
 * so a worker killed during those few milliseconds leaves a sandbox behind: each sandbox names its worker
 * (`STARRY_SANDBOX_OWNER`), and `reapOrphanedSandboxes` (run when the tools start and before every
 * program) kills those whose worker is gone.
 *
 * A worker running as root runs programs as `nobody`: bwrap starts as root (so it can open any workspace)
 * without a user namespace, and `setpriv` drops every id and capability inside, before the program runs.
 *
 * Without bwrap, or where it cannot create namespaces, programs fail closed (a fatal error that says how
 * to fix it); they never run unconfined.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants as fsConstants, existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { LimitName, SandboxLimits } from '../../core/worker-policy';
import { SandboxCgroup, cgroupHost, processLimit, reapCgroups, rlimitArgs, startTimeOf } from './limits';
import { ToolError } from '../../core/errors/activity';

/**
 * What confines programs on this host, for the worker's start line: bubblewrap or nothing (then
 * programs refuse to run), and what enforces the limits.
 *
 * ```ts
 * await sandboxReport(policy.limits) // 'sandbox: bubblewrap; limits by cgroup v1 (pids, memory) and rlimits'
 * ```
 */
export async function sandboxReport(limits: SandboxLimits): Promise<string> {
  const available = confinementAvailable();
  if (!available.ok) return `sandbox: none (${available.why}): shell.run and stdio MCP servers refuse to run`;
  const host = limits.cgroups ? await cgroupHost() : undefined;
  if (!host)
    return `sandbox: bubblewrap; limits by rlimits only (${limits.cgroups ? 'no cgroup this worker may create' : 'limits.cgroups is false'}: processes are counted per user)`;
  const controllers = [host.pids && 'pids', host.memory && 'memory'].filter(Boolean).join(', ');
  return `sandbox: bubblewrap; limits by cgroup v${host.version} (${controllers}) and rlimits`;
}

/** The system folders bound read-only: programs and their libraries; /etc is left out (secrets live there). */
const SYSTEM_DIRS = ['/usr'];
const SYSTEM_FILES = ['/etc/ld.so.cache', '/etc/alternatives'];
/** What a program with network needs to resolve names and trust certificates (never /etc/ssl/private). */
const NETWORK_FILES = [
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/ssl/certs',
  '/etc/ca-certificates',
  '/etc/pki/tls/certs',
];
/** Debian's merged /usr: the top-level names are symlinks into it. */
const USR_LINKS = ['bin', 'lib', 'lib64', 'sbin'];
/** The unprivileged user programs drop to when the worker runs as root. */
export const NOBODY = 65534;
/** Where the sandbox finds programs (all below the read-only /usr). */
export const SANDBOX_PATH = ['/usr/local/bin', '/usr/bin', '/bin'];

type Probe = { ok: true; prlimit: string; bwrap: string } | { ok: false; why: string };
let probed: Probe | undefined;

/** Whether prlimit and bwrap are on the worker's PATH and bwrap can build a sandbox here (checked once per process). */
export function confinementAvailable(): Probe {
  if (probed) return probed;
  const [prlimit, bwrap] = ['prlimit', 'bwrap'].map(onWorkerPath);
  if (!prlimit || !bwrap)
    return (probed = { ok: false, why: `${!bwrap ? 'bwrap' : 'prlimit'} is not on the worker's PATH` });
  // The namespaces, /proc and /dev every sandbox makes: a container that refuses one is found here, not at a call.
  const run = spawnSync(
    prlimit,
    [
      '--core=0',
      '--',
      bwrap,
      '--die-with-parent',
      '--unshare-all',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      ...systemBinds(),
      '--',
      'true',
    ],
    { stdio: 'pipe', timeout: 10_000, env: {} },
  );
  if (run.error)
    probed = {
      ok: false,
      why: `bwrap cannot start (${(run.error as NodeJS.ErrnoException).code ?? run.error.message})`,
    };
  else if (run.status !== 0)
    probed = {
      ok: false,
      why: `bwrap cannot build a sandbox: ${containerHint(run.stderr.toString().trim() || `exit ${run.status}`)}`,
    };
  else probed = { ok: true, prlimit, bwrap };
  return probed;
}

/**
 * bwrap's own error, and what lifts it when a container runtime's defaults are the cause
 * (docs/DEPLOY.md#shellrun-on-ec2): Docker masks parts of /proc, under which the kernel refuses the
 * sandbox its own /proc, and its default seccomp profile refuses `pivot_root` to every container.
 */
export function containerHint(bwrapError: string): string {
  if (/Can't mount proc/.test(bwrapError))
    return `${bwrapError} (the container masks parts of /proc, as Docker does by default, so a sandbox cannot mount its own: run the tool container privileged, as the ECS stack does, or under Docker with --security-opt systempaths=unconfined)`;
  if (/pivot_root/.test(bwrapError))
    return `${bwrapError} (the container's seccomp profile refuses pivot_root, as Docker's default does for every container: run the tool container privileged, as the ECS stack does, or under Docker with --security-opt seccomp=unconfined)`;
  return bwrapError;
}

/** The executable `name` on the worker's PATH, if any. */
function onWorkerPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':').filter((d) => d.startsWith('/'))) {
    try {
      accessSync(path.join(dir, name), fsConstants.X_OK);
      return path.join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}

function systemBinds(): string[] {
  return [...systemMounts().flatMap(([flag, p]) => [flag, p, p]), ...usrLinks()];
}

/** The system's programs and libraries, bound read-only at their own paths. */
function systemMounts(): Array<[string, string]> {
  return [...SYSTEM_DIRS, ...SYSTEM_FILES.filter((file) => existsSync(file))].map((p) => ['--ro-bind', p]);
}

function usrLinks(): string[] {
  return USR_LINKS.filter((name) => existsSync(`/usr/${name}`)).flatMap((name) => [
    '--symlink',
    `usr/${name}`,
    `/${name}`,
  ]);
}

/** What one confined program needs. */
export interface ConfinedCommand {
  command: string;
  argv: string[];
  /** Real paths of the workspace roots: the only writable folders. */
  roots: string[];
  cwd: string;
  /** Its whole environment (no value of it goes on a command line, where any user could read it). */
  env: Record<string, string>;
  /** Run as `nobody` (the worker runs as root). */
  dropRoot: boolean;
  /** The error source of its failures: `shell.run`, `mcp files`. */
  source: string;
  /** Who it is in a message (default: source): `MCP server 'files'`. */
  who?: string;
  /** What to do without bwrap, for the fail-closed error. */
  otherwise: string;
  limits: SandboxLimits;
  /** The largest file it may write, when less than limits.fileSizeBytes (the workspace's room left). */
  fileSizeBytes?: number;
  /** Keep the host's network (an MCP server its policy entry grants it). */
  network?: boolean;
  /** Directories bound read-only at their own paths. */
  readOnly?: string[];
}

/** A prepared sandbox: spawn `file` with `args` and `env`, then `release` it once the program ended. */
export interface Sandbox {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** The largest file the program may write (an exit by SIGXFSZ hit this). */
  fileSizeBytes: number;
  /**
   * The limit the sandbox's cgroup saw hit (processes, memory), if any; removes the cgroup. Call once the program
   * ended.
   */
  release(): Promise<LimitName | undefined>;
}

/**
 * Prepare the sandbox of `c`: its cgroup (where the host allows one) and the program, arguments and
 * environment that start it confined and limited.
 *
 * ```ts
 * const sandbox = await confinedSpawn({ command: 'ls', argv: ['-la'], roots: ['/ws'], cwd: '/ws', env: { PATH: '/usr/bin' }, dropRoot: false, source: 'shell.run', otherwise: '...', limits });
 * const child = spawn(sandbox.file, sandbox.args, { env: sandbox.env });
 * child.on('close', () => sandbox.release());
 * ```
 * @throws ToolError E_INTERNAL fatal when confinement is not available.
 */
export async function confinedSpawn(c: ConfinedCommand): Promise<Sandbox> {
  const available = confinementAvailable();
  if (!available.ok) {
    throw ToolError.of({
      code: 'E_INTERNAL',
      kind: 'fatal',
      source: c.source,
      message: `${c.who ?? c.source} refuses to run unconfined: ${available.why}. Install bubblewrap (apt-get install bubblewrap; scripts/setup.sh does) on the worker's host, or ${c.otherwise}.`,
    });
  }
  const cgroup = await SandboxCgroup.create(c.limits, sandboxOwner(), c.source);
  const fileSizeBytes = Math.min(c.fileSizeBytes ?? c.limits.fileSizeBytes, c.limits.fileSizeBytes);
  const rootWorker = process.getuid?.() === 0;
  // What no cgroup bounds, an rlimit does (per user for processes: see processLimit).
  const uid = c.dropRoot ? NOBODY : (process.getuid?.() ?? 0);
  const processes = cgroup?.capsProcesses ? undefined : await processLimit(uid, c.limits.processes);
  const limits = rlimitArgs(c.limits, { fileSizeBytes, processes, memory: !cgroup?.capsMemory });

  // Root: no user namespace, so the drop below is to the real `nobody`; otherwise bwrap makes one, unprivileged.
  const namespaces =
    rootWorker && c.dropRoot
      ? [
          '--unshare-ipc',
          '--unshare-pid',
          '--unshare-uts',
          '--unshare-cgroup-try',
          ...(c.network ? [] : ['--unshare-net']),
        ]
      : ['--unshare-all', ...(c.network ? ['--share-net'] : [])];
  const binds: Array<[string, string]> = [
    ...systemMounts(),
    ...(c.network
      ? NETWORK_FILES.filter((file) => existsSync(file)).map((file): [string, string] => ['--ro-bind', file])
      : []),
    ...(c.readOnly ?? []).map((dir): [string, string] => ['--ro-bind', dir]),
    ...c.roots.map((root): [string, string] => ['--bind', root]),
  ];
  // Parents before children, so a root inside a read-only directory stays writable (and the reverse).
  const depth = (p: string) => p.split('/').length;
  binds.sort((a, b) => depth(a[1]) - depth(b[1]));
  // The folders leading to them, made first: bwrap would make them 0700 as root, closed to `nobody`.
  const parents = new Set<string>();
  for (const [, p] of binds) for (let dir = path.dirname(p); dir !== '/'; dir = path.dirname(dir)) parents.add(dir);
  const args = ['--die-with-parent', '--new-session', ...namespaces, '--proc', '/proc', '--dev', '/dev'];
  // tmpfs treats size 0 as no limit: no room means a /tmp made read-only once the binds below it are in place.
  args.push(
    '--perms',
    '1777',
    ...(c.limits.tmpBytes > 0 ? ['--size', String(c.limits.tmpBytes)] : []),
    '--tmpfs',
    '/tmp',
  );
  for (const dir of [...parents].sort((a, b) => depth(a) - depth(b))) args.push('--perms', '0755', '--dir', dir);
  args.push(...binds.flatMap(([flag, p]) => [flag, p, p]), ...usrLinks());
  if (c.limits.tmpBytes === 0) args.push('--remount-ro', '/tmp');
  args.push('--chdir', c.cwd, '--setenv', OWNER_VAR, sandboxOwner());
  const drop = c.dropRoot
    ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--inh-caps=-all', '--no-new-privs', '--']
    : [];
  args.push('--', ...drop, c.command, ...c.argv);

  // A shell joins the cgroups before anything else runs, then becomes prlimit, which becomes bwrap. It
  // also unsets what a spawner adds to the environment (the MCP SDK adds the worker's LOGNAME, SHELL,
  // TERM, USER), and the PWD it exports itself.
  const extra = SPAWNER_ENV.filter((name) => !(name in c.env));
  const script = `while [ "$1" != -- ]; do echo $$ > "$1/cgroup.procs" || exit 125; shift; done; shift;${extra.length ? ` unset ${extra.join(' ')};` : ''} exec "$@"`;
  return {
    file: '/bin/sh',
    args: [
      '-c',
      script,
      'sh',
      ...(cgroup?.dirs ?? []),
      '--',
      available.prlimit,
      ...limits,
      '--',
      available.bwrap,
      ...args,
    ],
    // Empty placeholders: a spawner that merges the worker's values under these (the MCP SDK) adds nothing of them.
    env: { ...Object.fromEntries(extra.map((name) => [name, ''])), ...c.env },
    fileSizeBytes,
    async release() {
      if (!cgroup) return undefined;
      const hit = await cgroup.hit();
      await cgroup.remove();
      return hit;
    },
  };
}

/**
 * Variables a spawner may add from the worker's environment (the MCP SDK's `getDefaultEnvironment`), and the shell's
 * PWD.
 */
const SPAWNER_ENV = ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'PWD'];

const OWNER_VAR = 'STARRY_SANDBOX_OWNER';

/**
 * True when `command` is an executable the sandbox can find: on its PATH, or a path (relative to `cwd`).
 * bwrap's own "execvp: No such file or directory" is less clear than a check first.
 */
export async function onSandboxPath(command: string, cwd: string): Promise<boolean> {
  const candidates = command.includes('/')
    ? [path.resolve(cwd, command)]
    : SANDBOX_PATH.map((dir) => path.join(dir, command));
  for (const file of candidates) {
    if (
      await fs.access(file, fsConstants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return true;
  }
  return false;
}

let owner: string | undefined;
/** This worker process as sandboxes name it: `pid.starttime`. */
export function sandboxOwner(): string {
  return (owner ??= `${process.pid}.${startTimeOf('self') ?? '0'}`);
}

/**
 * Kill every sandbox whose worker process is gone (a worker SIGKILLed while a sandbox was starting), and
 * remove the cgroups of such sandboxes. Killing a sandbox's init ends its whole PID namespace. Returns
 * how many processes and cgroups were removed.
 */
export async function reapOrphanedSandboxes(): Promise<number> {
  const alive = new Map<string, boolean>();
  const isAlive = (id: string): boolean => {
    if (!alive.has(id)) {
      const [ownerPid, start] = id.split('.');
      alive.set(id, startTimeOf(Number(ownerPid)) === start);
    }
    return alive.get(id)!;
  };
  let pids: string[];
  try {
    pids = (await fs.readdir('/proc')).filter((name) => /^\d+$/.test(name));
  } catch {
    return 0; // no /proc: nothing to find (and no bwrap either)
  }
  let killed = 0;
  for (const pid of pids) {
    const argv = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').then(
      (t) => t.split('\0'),
      (): string[] => [],
    );
    if (!argv[0]?.endsWith('bwrap')) continue;
    const at = argv.indexOf(OWNER_VAR);
    const id = at > 0 && argv[at - 1] === '--setenv' ? argv[at + 1] : undefined;
    if (!id || id === sandboxOwner() || isAlive(id)) continue;
    try {
      process.kill(Number(pid), 'SIGKILL');
      killed++;
    } catch {
      // gone meanwhile
    }
  }
  return killed + (await reapCgroups(sandboxOwner(), isAlive));
}
