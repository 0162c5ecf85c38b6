/**
 * The confinement `shell.run` programs run in: bubblewrap (`bwrap`, Debian package `bubblewrap`, installed
 * by scripts/setup.sh) builds a mount namespace holding only the system's programs (read-only), a fresh
 * /proc, /dev and /tmp, and the workspace roots. Outside files are not there to reach, whatever the
 * arguments say (symlinks out, `-f/etc/passwd`, `/proc/$PPID/environ`). No network, its own PID
 * namespace, and `--die-with-parent`: a SIGKILLed worker takes its programs with it.
 *
 * Without bwrap, or where it cannot create namespaces, `shell.run` fails closed (a fatal error that
 * says how to fix it); it never runs unconfined.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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
  args.push('--chdir', c.cwd, '--clearenv');
  for (const [key, value] of Object.entries(c.env)) args.push('--setenv', key, value);
  args.push('--', c.command, ...c.argv);
  if (!c.dropRoot) return { file: 'bwrap', args };
  return { file: 'setpriv', args: [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', 'bwrap', ...args] };
}
