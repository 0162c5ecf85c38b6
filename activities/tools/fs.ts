/**
 * `fs.read`, `fs.write`, `fs.list`: file access confined to the workspace (every path goes through
 * `resolveInWorkspace`). Failures are thrown as ToolError; `index.ts` turns them into data.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { ToolArgs } from '../../core/tools';
import type { ToolContext } from './context';
import { resolveInWorkspace } from './sandbox';
import { ToolError, toToolError } from './tool-error';

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
  const file = await resolveInWorkspace(ctx.roots, args.path, { mustExist: true, source });
  const cap = ctx.tools.maxOutputBytes;
  try {
    const stat = await fs.stat(file);
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
    const buffer = await readPrefix(file, limit + 1);
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
  }
}

async function readPrefix(file: string, bytes: number): Promise<Buffer> {
  const handle = await fs.open(file, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    let filled = 0;
    while (filled < bytes) {
      const { bytesRead } = await handle.read(buffer, filled, bytes - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return buffer.subarray(0, filled);
  } finally {
    await handle.close();
  }
}

/** Result of `fs.write`. */
export interface WriteResult {
  path: string;
  bytes: number;
  appended: boolean;
}

/**
 * Write (or append) a text file, creating missing parent directories inside the workspace.
 *
 * ```ts
 * await writeFile({ path: 'out/report.md', content: '# Report' }, ctx)
 * ```
 */
export async function writeFile(args: ToolArgs['fs.write'], ctx: ToolContext): Promise<WriteResult> {
  const source = 'fs.write';
  const file = await resolveInWorkspace(ctx.roots, args.path, { mustExist: false, source });
  const appended = args.append === true;
  try {
    // The resolved path is real and inside a root, so every directory created here is inside too.
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, args.content, { encoding: 'utf8', flag: appended ? 'a' : 'w' });
    return { path: file, bytes: Buffer.byteLength(args.content, 'utf8'), appended };
  } catch (err) {
    throw toToolError(err, source, args.path);
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
  const dir = await resolveInWorkspace(ctx.roots, shown, { mustExist: true, source });
  try {
    const dirents = await fs.readdir(dir, { withFileTypes: true });
    const entries = await Promise.all(
      dirents.map(async (d): Promise<ListEntry> => {
        const type = d.isSymbolicLink() ? 'symlink' : d.isDirectory() ? 'dir' : d.isFile() ? 'file' : 'other';
        const size = await fs.lstat(path.join(dir, d.name)).then(
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
