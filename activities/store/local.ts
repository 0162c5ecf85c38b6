/**
 * The local-directory driver: the embedded default (under the dev server's folder) and any worker
 * whose workers share a disk. A blob is the file `<dir>/<first 2 hex>/<hash>`, so no directory holds
 * more than 1/256 of the blobs.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import {
  BlobMissingError,
  blobBytes,
  checkBlobHash,
  sha256Hex,
  spacePrefix,
  verifiedBlob,
  type BlobStore,
} from './blob-store';

/**
 * A blob store in a local directory, created (mode 0700) when first written. Files are mode 0600
 * (transcripts hold whatever the tools read) and written atomically: a temporary file in the same
 * directory, flushed, then renamed, so a reader never sees half a blob and concurrent puts of one
 * content both end with the whole file.
 *
 * ```ts
 * const store = localDirStore(path.join(stateDir(), 'blobs'));
 * ```
 */
export function localDirStore(dir: string): BlobStore {
  const root = path.resolve(dir);
  const where = `directory ${root}`;
  const fileOf = (hash: string, space?: string) => path.join(root, spacePrefix(space), hash.slice(0, 2), hash);
  // The subdirectories made (or found) so far: a put into one of them makes no mkdir round trip.
  const made = new Set<string>();

  /** A new temporary file in `tmp`'s directory, made (mode 0700) when missing, or made again (once) if removed. */
  async function openNew(tmp: string, again = true): Promise<FileHandle> {
    const sub = path.dirname(tmp);
    if (!made.has(sub)) {
      await mkdir(sub, { recursive: true, mode: 0o700 });
      made.add(sub);
    }
    try {
      return await open(tmp, 'wx', 0o600);
    } catch (err) {
      // Removed since (the operator cleared the store): make it again, once.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !again) throw err;
      made.delete(sub);
      return openNew(tmp, false);
    }
  }

  return {
    where,
    dir: root,
    async put(content, space) {
      const bytes = blobBytes(content);
      const hash = sha256Hex(bytes);
      const file = fileOf(hash, space);
      const tmp = `${file}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
      // Whether it is stored already, and the file it would be written to, at once: each file system
      // call is a round trip through libuv's thread pool, and a put of new content (the usual one) waits
      // for one less. Stored already (same name, so same content) unless a crash left it short.
      const [stored, opened] = await Promise.allSettled([sizeOf(file), openNew(tmp)]);
      if (stored.status === 'fulfilled' && stored.value === bytes.length) {
        if (opened.status === 'fulfilled') await discard(opened.value, tmp);
        return hash;
      }
      if (opened.status === 'rejected') throw opened.reason;
      const fh = opened.value;
      try {
        try {
          if (stored.status === 'rejected') throw stored.reason;
          await fh.writeFile(bytes);
          // The history will name this blob as soon as the activity returns: it must be on disk by then.
          await fh.sync();
        } finally {
          await fh.close();
        }
        await rename(tmp, file);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
      return hash;
    },
    async get(hash, space) {
      const file = fileOf(checkBlobHash(hash), space);
      let bytes: Buffer;
      try {
        bytes = await readFile(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobMissingError(hash, where, { cause: err });
        throw err;
      }
      return verifiedBlob(hash, bytes, where);
    },
  };
}

/** Close and remove a temporary file that was not needed. */
async function discard(fh: FileHandle, tmp: string): Promise<void> {
  await fh.close();
  await rm(tmp, { force: true });
}

/** The file's size, or undefined when there is none. */
async function sizeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
