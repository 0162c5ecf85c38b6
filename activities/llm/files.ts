/**
 * The files an `llm` spec names (a scripted controller's script, a local model) are read only inside
 * the directories the worker's policy allows (a script: the task's roots and `llmDirs`; a model:
 * `llmDirs`, never inside a root, since tasks write there and the model runtime is native code). A path outside is refused
 * before anything touches it, so the refusal says nothing of what is there; a path inside is opened
 * without following a final symlink, and what was opened is checked again by its real location
 * (`/proc/self/fd/N`), so a symlink in an allowed directory cannot lead out either.
 */
import { constants, promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { isWithin, normalizePosix } from '../../core/worker-policy';
import { LlmError } from '../../core/errors/activity';

/** What is being read, for messages: `script` or `model`. */
export interface AllowedFile {
  file: string;
  what: 'script' | 'model';
  source: string;
  /** Absolute directories the file must lie in; undefined: anywhere (library use without a policy). */
  dirs?: string[];
  /** Absolute directories it must not lie in, by real path: the workspace roots, for a model. */
  notIn?: string[];
}

/**
 * Open `file` for reading if it lies inside `dirs`, by path and by what was opened.
 *
 * ```ts
 * const handle = await openAllowed({ file: '/srv/ws/turns.json', what: 'script', source: 'llm scripted', dirs: ['/srv/ws'] });
 * ```
 * @throws LlmError EPERM (fatal) when the file is outside, without saying whether it exists; the
 * open's own error (ENOENT, EACCES, …) when it is inside.
 */
export async function openAllowed(f: AllowedFile): Promise<FileHandle> {
  const within = (dirs: string[]) => dirs.some((dir) => isWithin(normalizePosix(f.file), dir));
  if (f.dirs && !(f.file.startsWith('/') && within(f.dirs) && !within(f.notIn ?? []))) throw outside(f);
  const handle = await fs
    .open(f.file, constants.O_RDONLY | (f.dirs ? constants.O_NOFOLLOW : 0))
    .catch((err: unknown) => {
      // A final symlink inside an allowed directory: refused like a path outside, whatever it points at.
      throw f.dirs && (err as NodeJS.ErrnoException).code === 'ELOOP' ? outside(f) : err;
    });
  if (!f.dirs) return handle;
  try {
    const real = await fs.readlink(`/proc/self/fd/${handle.fd}`);
    const [realDirs, realNot] = await Promise.all(
      [f.dirs, f.notIn ?? []].map((dirs) => Promise.all(dirs.map((dir) => fs.realpath(dir).catch(() => undefined)))),
    );
    const inside = (dirs: Array<string | undefined>) => dirs.some((dir) => dir !== undefined && isWithin(real, dir));
    if (!inside(realDirs!) || inside(realNot!)) throw outside(f);
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** The real path of an allowed file (checked as `openAllowed` does), for a reader in another process. */
export async function realpathAllowed(f: AllowedFile): Promise<string> {
  const handle = await openAllowed(f);
  try {
    return await fs.readlink(`/proc/self/fd/${handle.fd}`);
  } finally {
    await handle.close();
  }
}

function outside(f: AllowedFile): LlmError {
  return LlmError.of({
    code: 'EPERM',
    kind: 'fatal',
    source: f.source,
    message: `the worker reads ${f.what}s only inside ${(f.dirs ?? []).join(', ')}${f.notIn?.length ? `, outside ${f.notIn.join(', ')}` : ''}: '${f.file}' is not one of them`,
    suggestion: f.notIn?.length
      ? `Put the ${f.what} in a directory of llmDirs outside the workspace roots (tasks write there), or ask the worker's operator to add its directory to llmDirs in STARRY_WORKER_POLICY; then unlock the agent.`
      : `Put the ${f.what} inside a workspace root, or ask the worker's operator to add its directory to llmDirs in STARRY_WORKER_POLICY; then unlock the agent.`,
  });
}
