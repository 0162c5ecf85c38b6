/**
 * One dev server per SQLite file. Two Temporal servers on one file would both run its workflows, so the
 * server holds an exclusive lock (flock) on `<file>.lock` for its whole life: the locked file is its
 * file descriptor 3, and the kernel releases the lock when the server exits, however it exits (Ctrl-C,
 * `starry server stop`, SIGKILL, a crash). No pid is guessed. The file's content names the server that
 * holds it, for the refusal of a second one.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';

/** Who holds a SQLite file's lock: what the lock file says. */
export interface DbHolder {
  address: string;
  uiUrl: string;
  pid: number;
  startedAt: string;
}

/**
 * A second dev server for a SQLite file that a running one uses.
 *
 * ```ts
 * try { await startDevServer({ port: 7300 }); } catch (err) { if (err instanceof DbInUseError) console.log(err.holder?.address); }
 * ```
 */
export class DbInUseError extends Error {
  constructor(
    readonly dbFile: string,
    readonly holder: DbHolder | undefined,
  ) {
    const who = holder
      ? `the Temporal dev server at ${holder.address} (pid ${holder.pid}, Web UI ${holder.uiUrl})`
      : 'another Temporal dev server (starting now)';
    const port = holder?.address.split(':').pop();
    super(
      `the SQLite file ${dbFile} is in use by ${who}, and two servers must not share one file: use that one${port ? ` (--port ${port}, or TEMPORAL_ADDRESS=${holder?.address})` : ''}, stop it first${port ? ` (\`starry server stop --port ${port}\`, or Ctrl-C where \`starry dev\` runs)` : ''}, or give this one a file of its own (\`starry dev --db FILE\`)`,
    );
    this.name = 'DbInUseError';
  }
}

/** The lock file beside a SQLite file. */
export function lockFileOf(dbFile: string): string {
  return `${dbFile}.lock`;
}

/** A lock taken here, to hand to the server: pass `fd` as the child's fd 3, then `release` this copy. */
export interface DbLock {
  fd: number;
  /** Write who holds it into the lock file (after the server started: its pid is known). */
  describe(holder: DbHolder): void;
  /** Close this process's copy: the lock then lives as long as the server's. */
  release(): void;
}

/**
 * Lock `dbFile` for a server about to start.
 * @throws DbInUseError naming the server that holds it.
 */
export function lockDb(dbFile: string): DbLock {
  const file = lockFileOf(dbFile);
  const fd = openSync(file, 'a+');
  if (!tryLock(fd, file)) {
    closeSync(fd);
    throw new DbInUseError(dbFile, holderIn(file));
  }
  return {
    fd,
    describe(holder) {
      ftruncateSync(fd, 0);
      writeSync(fd, `${JSON.stringify(holder)}\n`);
    },
    release: () => closeSync(fd),
  };
}

/**
 * The server that holds `dbFile`'s lock, or nothing when none does (no server runs on the file). A
 * lock file left by a server that is gone says nothing: its lock was released with the server.
 */
export function dbHolder(dbFile: string): DbHolder | undefined {
  const file = lockFileOf(dbFile);
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    return tryLock(fd, file) ? undefined : (holderIn(file) ?? { address: '?', uiUrl: '?', pid: 0, startedAt: '?' });
  } finally {
    closeSync(fd);
  }
}

function holderIn(file: string): DbHolder | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DbHolder;
  } catch {
    return undefined; // still being written by a server that is starting
  }
}

/**
 * Take the exclusive lock on `fd` without waiting: true when taken, false when another holds it. Node
 * has no flock, so a short child takes it on the same open file (its fd 3), which keeps it after the
 * child exits: flock(1) from util-linux, or python3 where there is none (macOS).
 */
function tryLock(fd: number, file: string): boolean {
  const stdio: ['ignore', 'ignore', 'pipe', number] = ['ignore', 'ignore', 'pipe', fd];
  const BUSY = 75;
  let r = spawnSync('flock', ['--nonblock', '--exclusive', '--conflict-exit-code', String(BUSY), '3'], { stdio });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    const py = `import fcntl, sys\ntry:\n    fcntl.flock(3, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    sys.exit(${BUSY})`;
    r = spawnSync('python3', ['-c', py], { stdio });
    if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
      throw new Error(
        `cannot lock ${file}: neither flock (util-linux) nor python3 is installed, and the dev server needs one of them to be sure no other server uses its SQLite file`,
      );
    }
  }
  if (r.status === 0) return true;
  if (r.status === BUSY) return false;
  throw new Error(`cannot lock ${file}: ${r.error?.message ?? String(r.stderr).trim()}`);
}
