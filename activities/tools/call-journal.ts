/**
 * The journal of side-effecting tool calls, so a retried call (the worker died after the effect, before
 * Temporal heard the result) has the same effect once. Each call has a stable id (workflow id, run id
 * and activity id: the same for every attempt of one call). Before `fs.write` touches a file it records
 * what the file was (its size before an append); a retry of the same call restores that and redoes the
 * write, so the file ends as if the call ran once.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { stateDir } from '../../dev/paths';

/**
 * The journal's directory: the policy's `journalDir`, else `tool-journal` in the worker's state folder
 * (`.temporal/`, as the content store), which outlives a restart (a temp dir may not) and lies under no
 * root (a worker refuses roots that hold it).
 */
export function journalDirOf(policy: { journalDir?: string }): string {
  return policy.journalDir ?? path.join(stateDir(), 'tool-journal');
}

/** Where a call records itself: its stable id and the worker's journal directory. */
export interface ToolCallRef {
  id: string;
  journalDir: string;
}

/** What `fs.write` records before writing. */
export interface WriteEntry {
  file: string;
  /** Size of the file before this call appended to it. */
  sizeBefore: number;
}

function entryPath(call: ToolCallRef): string {
  return path.join(call.journalDir, `${createHash('sha256').update(call.id).digest('hex')}.json`);
}

/** The entry an earlier attempt of this call left, if any. */
export async function readEntry(call: ToolCallRef): Promise<WriteEntry | undefined> {
  try {
    return JSON.parse(await fs.readFile(entryPath(call), 'utf8')) as WriteEntry;
  } catch {
    return undefined; // none, or torn by a crash while it was written (then the write never started)
  }
}

/** Record `entry` durably (write, fsync, rename) before the effect starts. */
export async function recordEntry(call: ToolCallRef, entry: WriteEntry): Promise<void> {
  await fs.mkdir(call.journalDir, { recursive: true, mode: 0o700 });
  const final = entryPath(call);
  const tmp = `${final}.${process.pid}.tmp`;
  const handle = await fs.open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(JSON.stringify(entry));
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, final);
}
