/**
 * The local-directory driver: the embedded default (under the dev server's folder) and any worker
 * whose workers share a disk. A blob is the file `<dir>/<first 2 hex>/<hash>`, so no directory holds
 * more than 1/256 of the blobs.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { BlobMissingError, blobBytes, checkBlobHash, sha256Hex, verifiedBlob, type BlobStore } from './blob-store';

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
  const fileOf = (hash: string) => path.join(root, hash.slice(0, 2), hash);
  return {
    where,
    async put(content) {
      const bytes = blobBytes(content);
      const hash = sha256Hex(bytes);
      const file = fileOf(hash);
      // Stored already (same name, so same content) — unless a crash left it short: then write it again.
      if ((await sizeOf(file)) === bytes.length) return hash;
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
      try {
        const fh = await open(tmp, 'wx', 0o600);
        try {
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
    async get(hash) {
      const file = fileOf(checkBlobHash(hash));
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

/** The file's size, or undefined when there is none. */
async function sizeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
