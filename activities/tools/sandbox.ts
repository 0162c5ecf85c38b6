/**
 * Path confinement: every path a tool touches is resolved to its real location and must lie inside one
 * of the workspace roots. Containment is checked on realpaths, so `..` segments and symlinks (even
 * dangling ones, for files about to be created) cannot lead outside.
 *
 * The check is done twice: on the path (for a clear error before anything happens) and on what was
 * actually opened (`openConfined`): the directory chain is opened from the root one name at a time
 * through descriptors, each with O_NOFOLLOW, the file likewise, its real location is read back from
 * `/proc/self/fd`, and it is used through that descriptor only. So a symlink swapped in between
 * the check and the use (the check-then-use race) is caught by the same operation that uses the file,
 * and a hardlink to an outside file (more than one link) is refused.
 */
import { constants, promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { ToolError, messageOf, nodeCode, normalizeThrown } from '../../core/errors/activity';

/** Longest path accepted; longer ones are malformed for our purposes (Linux PATH_MAX is 4096). */
const MAX_PATH_CHARS = 4096;
/** Symlinks followed by hand (dangling ones) before giving up, as the kernel does with ELOOP. */
const MAX_SYMLINK_HOPS = 40;

/** Options of `resolveInWorkspace`. */
export interface ResolveOptions {
  /** false for files about to be created: the nearest existing ancestor is checked instead. */
  mustExist: boolean;
  /** The tool, reported as the error's source. */
  source: string;
}

/**
 * Resolve `userPath` (relative to the first root, or absolute) to its real absolute path, refusing
 * anything outside every root. A tool passes its call's `ctx.workspace`; a list of roots is looked up
 * afresh.
 *
 * ```ts
 * const file = await resolveInWorkspace(['/srv/ws'], 'notes/todo.md', { mustExist: true, source: 'fs.read' });
 * ```
 * @throws ToolError — EINVAL (malformed path), EPERM (outside the workspace), the Node code of a failed
 * lookup (ENOENT, ENOTDIR, EACCES, ...), or E_INTERNAL fatal when a workspace root is missing.
 */
export async function resolveInWorkspace(
  workspace: string[] | Workspace,
  userPath: string,
  opts: ResolveOptions,
): Promise<string> {
  const { source } = opts;
  checkPathText(userPath, source);
  const ws = workspaceOf(workspace, source);
  const { roots } = ws;
  const first = roots[0];
  // The path is looked up while the roots are (one round trip through libuv's thread pool, not two);
  // realRoots() refuses a list without an absolute first root, with the error a user should see.
  const absolute = typeof first === 'string' && path.isAbsolute(first) ? path.resolve(first, userPath) : undefined;
  const [realRoots, found] = await Promise.all([
    ws.realRoots(),
    absolute === undefined ? undefined : realpathAllowMissing(absolute, 0),
  ]);
  const { real, error } = found!;

  // Containment first, so a lookup outside the workspace never reveals whether something exists there.
  if (!realRoots.some((root) => isInside(real, root))) {
    const shown = path.isAbsolute(userPath) ? `'${userPath}'` : `'${userPath}' (resolves to ${real})`;
    throw ToolError.of({
      code: 'EPERM',
      source,
      message: `EPERM: operation not permitted, access outside the workspace: ${shown}`,
      suggestion: `Permitted roots: ${roots.join(', ')}. Use fs.list to see what is inside.`,
    });
  }
  if (error !== undefined && !(nodeCode(error) === 'ENOENT' && !opts.mustExist)) {
    const normalized = normalizeThrown(error, source, userPath);
    throw new ToolError(
      nodeCode(error) === 'ENOENT' ? { ...normalized, suggestion: 'Use fs.list to see what exists.' } : normalized,
      undefined,
      { cause: error },
    );
  }
  return real;
}

/** True when `child` is `root` or below it (both absolute and normalized). */
export function isInside(child: string, root: string): boolean {
  const rel = path.relative(root, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

function checkPathText(userPath: unknown, source: string): void {
  const malformed = (why: string) =>
    ToolError.of({
      code: 'EINVAL',
      source,
      message: `EINVAL: invalid path: ${why}`,
      suggestion: 'Pass a path relative to the workspace root, e.g. "notes/todo.md".',
    });
  if (typeof userPath !== 'string')
    throw malformed(`expected a string, got ${userPath === null ? 'null' : typeof userPath}`);
  if (userPath.trim() === '') throw malformed('the path is empty');
  if (userPath.includes('\0')) throw malformed(`the path contains a NUL byte: ${JSON.stringify(userPath)}`);
  if (userPath.length > MAX_PATH_CHARS) throw malformed(`the path is longer than ${MAX_PATH_CHARS} characters`);
}

/**
 * The workspace of one tool call: its roots as given, and their realpaths, each looked up once for the
 * call. The policy check, each path's resolution and the check of what was opened all compare against
 * the same real roots: a root's symlink retargeted during the call cannot widen what a later step
 * accepts, and a call does not look its roots up again at every step.
 */
export class Workspace {
  private readonly realpaths = new Map<string, Promise<string>>();
  private checked?: Promise<string[]>;

  /** `source`: the tool, named by the error of a missing root. */
  constructor(
    readonly roots: string[],
    readonly source: string,
  ) {}

  /** The realpath of `root` (one of `roots`); rejects as `fs.realpath` does. */
  realpath(root: string): Promise<string> {
    let real = this.realpaths.get(root);
    if (real === undefined) this.realpaths.set(root, (real = fs.realpath(root)));
    return real;
  }

  /** The realpath of every root, each an existing directory. @throws ToolError E_INTERNAL fatal otherwise. */
  realRoots(): Promise<string[]> {
    return (this.checked ??= realRootsOf(this));
  }
}

function workspaceOf(workspace: string[] | Workspace, source: string): Workspace {
  return workspace instanceof Workspace ? workspace : new Workspace(workspace, source);
}

/** The realpath of every root. A missing root is a deployment fault, not something the model can fix. */
async function realRootsOf(ws: Workspace): Promise<string[]> {
  const { roots, source } = ws;
  const fatal = (message: string) => ToolError.of({ code: 'E_INTERNAL', kind: 'fatal', source, message });
  if (!Array.isArray(roots) || roots.length === 0) throw fatal('No workspace root is configured.');
  return Promise.all(
    roots.map(async (root) => {
      if (typeof root !== 'string' || !path.isAbsolute(root)) {
        throw fatal(
          `Workspace root ${JSON.stringify(root)} is not an absolute path; resolve roots before starting the task.`,
        );
      }
      let real: string;
      let stat;
      try {
        real = await ws.realpath(root);
        stat = await fs.stat(real);
      } catch (err) {
        if (nodeCode(err) === 'ENOENT') {
          throw fatal(
            `Workspace root '${root}' does not exist. Create it (mkdir -p '${root}') or fix the agent's workspace setting.`,
          );
        }
        throw fatal(`Workspace root '${root}' cannot be opened: ${messageOf(err)}`);
      }
      if (!stat.isDirectory())
        throw fatal(`Workspace root '${root}' is not a directory. Point the workspace at a directory.`);
      return real;
    }),
  );
}

/**
 * Like `fs.realpath`, but for a path that does not (fully) exist it returns the realpath of the nearest
 * existing ancestor joined with the rest, plus the lookup error. Dangling symlinks are followed by hand,
 * because creating a file through one would land wherever it points.
 */
async function realpathAllowMissing(absolute: string, hops: number): Promise<{ real: string; error?: unknown }> {
  try {
    return { real: await fs.realpath(absolute) };
  } catch (error) {
    const parent = path.dirname(absolute);
    if (parent === absolute) return { real: absolute, error };
    const above = await realpathAllowMissing(parent, hops);
    const candidate = path.join(above.real, path.basename(absolute));
    if (above.error !== undefined) return { real: candidate, error: above.error };
    if (nodeCode(error) === 'ENOENT') {
      const target = await danglingTarget(candidate);
      if (target !== undefined) {
        if (hops >= MAX_SYMLINK_HOPS)
          return { real: candidate, error: Object.assign(new Error('ELOOP'), { code: 'ELOOP' }) };
        return realpathAllowMissing(path.resolve(above.real, target), hops + 1);
      }
    }
    return { real: candidate, error };
  }
}

/** The target of `file` when it is a symlink (its realpath failed, so it dangles), else undefined. */
async function danglingTarget(file: string): Promise<string | undefined> {
  try {
    const stat = await fs.lstat(file);
    return stat.isSymbolicLink() ? await fs.readlink(file) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Open `file` (a path `resolveInWorkspace` returned) and prove that what was opened lies inside a root:
 * its directory is opened beneath the root by descriptor (`openDirBeneath`), the file is opened
 * through that descriptor with O_NOFOLLOW (a final symlink is refused), `/proc/self/fd/N` names the
 * opened file's real location whatever happened to the path meanwhile (checked again), and a regular
 * file with more than one link (a hardlink, maybe to an outside file) is refused. Use the handle, or
 * `fdPath(handle)`, never the path again.
 *
 * ```ts
 * const handle = await openConfined(ctx.workspace, file, constants.O_RDONLY, { source: 'fs.read', shown: 'a.txt' });
 * ```
 * @throws ToolError EPERM when the opened file is outside every root or has several links.
 */
export async function openConfined(
  workspace: string[] | Workspace,
  file: string,
  flags: number,
  opts: { source: string; shown: string; mode?: number; createDirs?: boolean },
): Promise<FileHandle> {
  const { source, shown } = opts;
  const ws = workspaceOf(workspace, source);
  const { roots } = ws;
  const realRoots = await ws.realRoots();
  let handle: FileHandle;
  if (realRoots.includes(file)) {
    handle = await openChecked(file, flags, opts, roots);
  } else {
    const dir = await openDirBeneath(realRoots, roots, path.dirname(file), opts);
    try {
      handle = await openChecked(`${fdPath(dir)}/${path.basename(file)}`, flags, opts, roots);
    } finally {
      await dir.close();
    }
  }
  try {
    // Both at once (one round trip); the stat is looked at only once the location is proven inside.
    const [located, stated] = await Promise.allSettled([fs.readlink(fdPath(handle)), handle.stat()]);
    if (located.status === 'rejected') throw located.reason;
    const where = located.value;
    if (!realRoots.some((root) => isInside(where, root))) throw outside(roots, source, `'${shown}' (opened ${where})`);
    if (stated.status === 'rejected') throw stated.reason;
    const stat = stated.value;
    if (stat.isFile() && stat.nlink > 1) {
      throw ToolError.of({
        code: 'EPERM',
        source,
        message: `EPERM: operation not permitted, '${shown}' has ${stat.nlink} hard links (one may be outside the workspace)`,
        suggestion: 'Hard-linked files are refused; copy the content into a new file instead.',
      });
    }
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** `open` with O_NOFOLLOW: a symlink found where the checked path had none was swapped in. */
async function openChecked(
  file: string,
  flags: number,
  opts: { source: string; shown: string; mode?: number },
  roots: string[],
): Promise<FileHandle> {
  try {
    return await fs.open(file, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, opts.mode ?? 0o644);
  } catch (err) {
    if (nodeCode(err) === 'ELOOP') throw outside(roots, opts.source, `'${opts.shown}' is a symbolic link`);
    throw new ToolError(normalizeThrown(err, opts.source, opts.shown), undefined, { cause: err });
  }
}

/**
 * Open the directory `dir` (a real path inside a root) the way `openat` would, from its root down one
 * name at a time, each opened through the previous directory's descriptor (`/proc/self/fd/N/name`)
 * with O_NOFOLLOW. A directory swapped for a symlink after the path was checked is refused, never
 * followed, and with `createDirs` missing directories are made the same way: nothing is ever created
 * outside, whatever another process does to the path meanwhile.
 */
async function openDirBeneath(
  realRoots: string[],
  roots: string[],
  dir: string,
  opts: { source: string; shown: string; createDirs?: boolean },
): Promise<FileHandle> {
  // The innermost root holding `dir`: roots may nest.
  const root = realRoots.filter((r) => isInside(dir, r)).sort((a, b) => b.length - a.length)[0];
  if (root === undefined) throw outside(roots, opts.source, `'${opts.shown}'`);
  let handle = await openChecked(root, constants.O_RDONLY | constants.O_DIRECTORY, opts, roots);
  for (const name of path.relative(root, dir).split(path.sep).filter(Boolean)) {
    const next = `${fdPath(handle)}/${name}`;
    try {
      if (opts.createDirs)
        await fs.mkdir(next).catch((err: unknown) => {
          if (nodeCode(err) !== 'EEXIST')
            throw new ToolError(normalizeThrown(err, opts.source, opts.shown), undefined, { cause: err });
        });
      const inner = await openChecked(next, constants.O_RDONLY | constants.O_DIRECTORY, opts, roots);
      await handle.close();
      handle = inner;
    } catch (err) {
      await handle.close();
      throw err;
    }
  }
  return handle;
}

/** The `/proc/self/fd` path of an open handle: it names exactly the opened file or directory. */
export function fdPath(handle: FileHandle): string {
  return `/proc/self/fd/${handle.fd}`;
}

function outside(roots: string[], source: string, shown: string): ToolError {
  return ToolError.of({
    code: 'EPERM',
    source,
    message: `EPERM: operation not permitted, access outside the workspace: ${shown}`,
    suggestion: `Permitted roots: ${roots.join(', ')}. Use fs.list to see what is inside.`,
  });
}
