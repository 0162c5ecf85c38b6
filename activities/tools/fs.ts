/**
 * `fs.read`, `fs.write`, `fs.list`: file access confined to the workspace (every path goes through
 * `resolveInWorkspace`). Failures are thrown as ToolError; `index.ts` turns them into data.
 */
import { constants, promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import type { ToolArgs } from '../../core/tools';
import { DEFAULT_LIMITS } from '../../core/worker-policy';
import { readEntry, recordEntry } from './call-journal';
import type { ToolContext } from './context';
import { writeGrowth } from '../../core/disk';
import { reserveWrite } from './disk';
import { fdPath, openConfined, resolveInWorkspace, type Workspace } from './sandbox';
import { ToolError, toToolError } from '../../core/errors/activity';

/** Result of `fs.read`. `truncated` is true when `maxBytes` cut the file short. */
export interface ReadResult {
  path: string;
  content: string;
  bytes: number;
  truncated: boolean;
}

/**
 * Read a text file. Without `maxBytes`, a file larger than `tools.maxOutputBytes` is E_OUTPUT_TOO_LARGE
 * (the model is told to ask for a prefix) rather than silently cut.
 *
 * ```ts
 * await readFile({ path: 'notes.md' }, ctx) // { path: '/ws/notes.md', content: '...', bytes: 12, truncated: false }
 * ```
 */
export async function readFile(args: ToolArgs['fs.read'], ctx: ToolContext): Promise<ReadResult> {
  const source = 'fs.read';
  const file = await resolveInWorkspace(ctx.workspace, args.path, { mustExist: true, source });
  const cap = ctx.tools.maxOutputBytes;
  const handle = await openConfined(ctx.workspace, file, constants.O_RDONLY, { source, shown: args.path });
  try {
    const stat = await handle.stat();
    if (stat.isDirectory()) {
      throw ToolError.of({
        code: 'EISDIR',
        source,
        message: `EISDIR: illegal operation on a directory, read '${args.path}'`,
        suggestion: 'Use fs.list to see what is inside a directory.',
      });
    }
    // FIFOs and devices could block or never end.
    if (!stat.isFile()) {
      throw ToolError.of({ code: 'EINVAL', source, message: `EINVAL: not a regular file, read '${args.path}'` });
    }
    const limit = args.maxBytes !== undefined && args.maxBytes <= cap ? args.maxBytes : cap;
    // One byte more than the limit tells "exactly the limit" from "longer", whatever stat said.
    const buffer = await readPrefix(handle, limit + 1);
    if (buffer.length > limit && limit === args.maxBytes) {
      return { path: file, content: buffer.subarray(0, limit).toString('utf8'), bytes: limit, truncated: true };
    }
    if (buffer.length > limit) {
      throw ToolError.of({
        code: 'E_OUTPUT_TOO_LARGE',
        source,
        message: `E_OUTPUT_TOO_LARGE: '${args.path}' is ${stat.size} bytes; tool output is capped at ${cap} bytes`,
        suggestion: `Pass maxBytes (at most ${cap}) to read the start of the file, or use shell.run with head, tail or grep.`,
      });
    }
    return { path: file, content: buffer.toString('utf8'), bytes: buffer.length, truncated: false };
  } catch (err) {
    throw toToolError(err, source, args.path);
  } finally {
    await handle.close();
  }
}

async function readPrefix(handle: FileHandle, bytes: number): Promise<Buffer> {
  const buffer = Buffer.alloc(bytes);
  let filled = 0;
  while (filled < bytes) {
    const { bytesRead } = await handle.read(buffer, filled, bytes - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

/** Result of `fs.write`. */
export interface WriteResult {
  path: string;
  bytes: number;
  appended: boolean;
}

/**
 * Write (or append) a text file, creating missing parent directories inside the workspace. Idempotent
 * per call when `ctx.call` is set (the activity sets it): a retried call leaves the file as one run would
 * (activities/tools/call-journal.ts). The file is used only through a confined descriptor. A write that
 * would grow the workspace past its cap (`limits.workspaceBytes`), or its tenant's workspaces past theirs
 * (`limits.tenantBytes`), is E_LIMIT, the directories it creates counted (core/disk.ts); one that shrinks it is not.
 *
 * ```ts
 * await writeFile({ path: 'out/report.md', content: '# Report' }, ctx)
 * ```
 */
export async function writeFile(args: ToolArgs['fs.write'], ctx: ToolContext): Promise<WriteResult> {
  const source = 'fs.write';
  const file = await resolveInWorkspace(ctx.workspace, args.path, { mustExist: false, source });
  const appended = args.append === true;
  const release = await reserveRoom(ctx, file, args.path, Buffer.byteLength(args.content, 'utf8'), appended);
  // Missing directories are created beneath the root by descriptor (openConfined), never by path.
  const handle = await openForWrite(ctx.workspace, file, args.path).catch((err: unknown) => {
    release();
    throw err;
  });
  try {
    const stat = await handle.stat();
    if (!stat.isFile())
      throw ToolError.of({ code: 'EINVAL', source, message: `EINVAL: not a regular file, write '${args.path}'` });
    let at = 0;
    if (appended) {
      const earlier = ctx.call ? await readEntry(ctx.call) : undefined;
      // A retry of this call: back to the size before its first attempt, then append again.
      at = earlier?.file === file ? Math.min(earlier.sizeBefore, stat.size) : stat.size;
      if (ctx.call && earlier === undefined) await recordEntry(ctx.call, { file, sizeBefore: at });
    }
    await handle.truncate(at);
    const data = Buffer.from(args.content, 'utf8');
    await handle.write(data, 0, data.length, at);
    return { path: file, bytes: data.length, appended };
  } catch (err) {
    release();
    throw toToolError(err, source, args.path);
  } finally {
    await handle.close();
  }
}

/**
 * E_LIMIT when writing `bytes` to `file` would take the workspace or its tenant's space over its cap (an estimate:
 * nothing is opened), counting the directories the write creates; otherwise what takes the write's growth back out
 * of the tenant's total when it fails.
 */
async function reserveRoom(
  ctx: ToolContext,
  file: string,
  shown: string,
  bytes: number,
  appended: boolean,
): Promise<() => void> {
  const existing = await fs.stat(file).then(
    (s) => (s.isFile() ? s.size : undefined),
    () => undefined,
  );
  const roots = await ctx.workspace.realRoots();
  const growth = writeGrowth({
    ...(existing !== undefined ? { existing } : {}),
    size: appended ? (existing ?? 0) + bytes : bytes,
    newDirs: await missingDirs(file, roots),
  });
  const scope = {
    roots,
    limits: ctx.limits ?? DEFAULT_LIMITS,
    source: 'fs.write',
    ...(ctx.space ? { space: ctx.space } : {}),
  };
  return reserveWrite(scope, { growth, what: `writing '${shown}'`, bytes });
}

/** The directories above `file` that do not exist yet, up to its root: those `fs.write` would create. */
async function missingDirs(file: string, roots: string[]): Promise<number> {
  let missing = 0;
  for (let dir = path.dirname(file); !roots.includes(dir) && dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const exists = await fs.lstat(dir).then(
      () => true,
      () => false,
    );
    if (exists) break;
    missing++;
  }
  return missing;
}

/** Open an existing file, or create a new one (never through a symlink), confined. */
async function openForWrite(workspace: Workspace, file: string, shown: string): Promise<FileHandle> {
  const opts = { source: 'fs.write', shown, createDirs: true };
  try {
    return await openConfined(workspace, file, constants.O_WRONLY, opts);
  } catch (err) {
    if (!(ToolError.is(err) && err.error.code === 'ENOENT')) throw err;
    return openConfined(workspace, file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, opts);
  }
}

/** One directory entry as `fs.list` reports it. */
export interface ListEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
}

/** Result of `fs.list`. `truncated` is true when the entries were cut to fit `tools.maxOutputBytes`. */
export interface ListResult {
  path: string;
  entries: ListEntry[];
  total: number;
  truncated: boolean;
}

/**
 * List a directory (the first root by default), sorted by name. Symlinks are reported as such, not
 * followed. A listing larger than the output cap is cut, with `truncated` set, so a huge directory can
 * still be explored (fs.list has no argument to narrow it).
 *
 * ```ts
 * await listDir({}, ctx) // { path: '/ws', entries: [{ name: 'a.txt', type: 'file', size: 3 }], total: 1, truncated: false }
 * ```
 */
export async function listDir(args: ToolArgs['fs.list'], ctx: ToolContext): Promise<ListResult> {
  const source = 'fs.list';
  const shown = args.path ?? (ctx.roots[0] as string);
  const dir = await resolveInWorkspace(ctx.workspace, shown, { mustExist: true, source });
  const handle = await openConfined(ctx.workspace, dir, constants.O_RDONLY | constants.O_DIRECTORY, { source, shown });
  // Through the descriptor: the directory that was checked, whatever its path points at now.
  const opened = fdPath(handle);
  try {
    const dirents = await fs.readdir(opened, { withFileTypes: true });
    const entries = await Promise.all(
      dirents.map(async (d): Promise<ListEntry> => {
        const type = d.isSymbolicLink() ? 'symlink' : d.isDirectory() ? 'dir' : d.isFile() ? 'file' : 'other';
        const size = await fs.lstat(path.join(opened, d.name)).then(
          (s) => s.size,
          () => 0, // removed between readdir and lstat
        );
        return { name: d.name, type, size };
      }),
    );
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const kept = fitEntries(entries, ctx.tools.maxOutputBytes);
    return { path: dir, entries: kept, total: entries.length, truncated: kept.length < entries.length };
  } catch (err) {
    throw toToolError(err, source, shown);
  } finally {
    await handle.close();
  }
}

/** The longest prefix of `entries` whose JSON fits in `cap` bytes. */
function fitEntries(entries: ListEntry[], cap: number): ListEntry[] {
  let used = 2;
  for (let i = 0; i < entries.length; i++) {
    used += Buffer.byteLength(JSON.stringify(entries[i]), 'utf8') + 1;
    if (used > cap) return entries.slice(0, i);
  }
  return entries;
}
