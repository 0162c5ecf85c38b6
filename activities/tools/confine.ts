/**
 * The confinement `shell.run` programs run in: bubblewrap (`bwrap`, Debian package `bubblewrap`, installed
 * by scripts/setup.sh) builds a mount namespace holding only the system's programs (read-only), a fresh
 * /proc, /dev and /tmp, and the workspace roots. Outside files are not there to reach, whatever the
 * arguments say (symlinks out, `-f/etc/passwd`, `/proc/$PPID/environ`). No network, its own PID
 * namespace, and `--die-with-parent`: a SIGKILLed worker takes its programs with it. bwrap binds the
 * sandbox's init to the worker only once its setup is done, so a worker killed during those few
 * milliseconds leaves a sandbox behind: each sandbox names its worker (`STARRY_SANDBOX_OWNER`), and
 * `reapOrphanedSandboxes` (run when the tools start and before every program) kills those whose worker
 * is gone.
 *
 * Without bwrap, or where it cannot create namespaces, `shell.run` fails closed (a fatal error that
 * says how to fix it); it never runs unconfined.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, promises as fs, readFileSync } from 'node:fs';
import { ToolError } from './tool-error';

/** The system folders bound read-only: programs and their libraries; /etc is left out (secrets live there). */
const SYSTEM_DIRS = ['/usr'];
const SYSTEM_FILES = ['/etc/ld.so.cache', '/etc/alternatives'];
/** Debian's merged /usr: the top-level names are symlinks into it. */
const USR_LINKS = ['bin', 'lib', 'lib64', 'sbin'];
/** The unprivileged user programs drop to when the worker runs as root without allowing it. */
const NOBODY = 65534;

let probed: { ok: true } | { ok: false; why: string } | undefined;

/** Whether bwrap exists and can build a sandbox here (checked once per process). */
export function confinementAvailable(): { ok: true } | { ok: false; why: string } {
  if (probed) return probed;
  const run = spawnSync('bwrap', ['--die-with-parent', '--unshare-all', ...systemBinds(), '--', 'true'], { stdio: 'pipe', timeout: 10_000 });
  if (run.error) probed = { ok: false, why: `bwrap cannot start (${(run.error as NodeJS.ErrnoException).code ?? run.error.message})` };
  else if (run.status !== 0) probed = { ok: false, why: `bwrap cannot build a sandbox: ${run.stderr.toString().trim() || `exit ${run.status}`}` };
  else probed = { ok: true };
  return probed;
}

function systemBinds(): string[] {
  const args: string[] = [];
  for (const dir of SYSTEM_DIRS) args.push('--ro-bind', dir, dir);
  for (const file of SYSTEM_FILES) if (existsSync(file)) args.push('--ro-bind', file, file);
  for (const name of USR_LINKS) if (existsSync(`/usr/${name}`)) args.push('--symlink', `usr/${name}`, `/${name}`);
  return args;
}

/** What one confined program needs. */
export interface ConfinedCommand {
  command: string;
  argv: string[];
  /** Real paths of the workspace roots: the only writable folders. */
  roots: string[];
  cwd: string;
  env: Record<string, string>;
  /** Run as `nobody` (via setpriv) instead of the worker's root. */
  dropRoot: boolean;
}

/**
 * The program and arguments that run `c` confined.
 *
 * ```ts
 * const { file, args } = confinedSpawn({ command: 'ls', argv: ['-la'], roots: ['/ws'], cwd: '/ws', env: {}, dropRoot: false });
 * ```
 * @throws ToolError E_INTERNAL fatal when confinement is not available.
 */
export function confinedSpawn(c: ConfinedCommand): { file: string; args: string[] } {
  const available = confinementAvailable();
  if (!available.ok) {
    throw ToolError.of({
      code: 'E_INTERNAL',
      kind: 'fatal',
      source: 'shell.run',
      message: `shell.run refuses to run unconfined: ${available.why}. Install bubblewrap (apt-get install bubblewrap; scripts/setup.sh does) on the worker's host, or drop shell.run from the worker policy.`,
    });
  }
  const args = ['--die-with-parent', '--new-session', '--unshare-all', ...systemBinds(), '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp'];
  for (const root of c.roots) args.push('--bind', root, root);
  args.push('--chdir', c.cwd, '--clearenv', '--setenv', OWNER_VAR, sandboxOwner());
  for (const [key, value] of Object.entries(c.env)) args.push('--setenv', key, value);
  args.push('--', c.command, ...c.argv);
  if (!c.dropRoot) return { file: 'bwrap', args };
  return { file: 'setpriv', args: [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', 'bwrap', ...args] };
}

const OWNER_VAR = 'STARRY_SANDBOX_OWNER';

/** A process's start time (clock ticks since boot), so a reused pid is not taken for its predecessor. */
function startTimeOf(pid: number | 'self', stat?: string): string | undefined {
  try {
    const text = stat ?? readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses); starttime is field 22.
    return text.slice(text.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

let owner: string | undefined;
/** This worker process as sandboxes name it: `pid.starttime`. */
export function sandboxOwner(): string {
  return (owner ??= `${process.pid}.${startTimeOf('self') ?? '0'}`);
}

/**
 * Kill every sandbox whose worker process is gone (a worker SIGKILLed while a sandbox was starting).
 * Killing a sandbox's init ends its whole PID namespace. Returns how many processes were killed.
 */
export async function reapOrphanedSandboxes(): Promise<number> {
  let pids: string[];
  try {
    pids = (await fs.readdir('/proc')).filter((name) => /^\d+$/.test(name));
  } catch {
    return 0; // no /proc: nothing to find (and no bwrap either)
  }
  const alive = new Map<string, boolean>();
  let killed = 0;
  for (const pid of pids) {
    const argv = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').then((t) => t.split('\0'), (): string[] => []);
    if (!argv[0]?.endsWith('bwrap')) continue;
    const at = argv.indexOf(OWNER_VAR);
    const id = at > 0 && argv[at - 1] === '--setenv' ? argv[at + 1] : undefined;
    if (!id || id === sandboxOwner()) continue;
    if (!alive.has(id)) {
      const [ownerPid, start] = id.split('.');
      alive.set(id, startTimeOf(Number(ownerPid)) === start);
    }
    if (alive.get(id)) continue;
    try {
      process.kill(Number(pid), 'SIGKILL');
      killed++;
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}
