/**
 * An in-process cache in front of a blob store. Blobs are immutable and named by their hash, so a
 * cached blob is never stale: the cache needs no invalidation, only a size limit (least recently used
 * blobs go first, counted in bytes).
 */
import { blobBytes, checkBlobHash, sha256Hex, spacePrefix, type BlobStore } from './blob-store';

/**
 * The store, with the blobs this process read or wrote lately kept in memory (at most `maxBytes`; a
 * larger blob is not kept): a get of a cached hash does not reach the store, nor does a put of
 * content it holds, and concurrent gets of one hash share one read.
 *
 * ```ts
 * const store = cachedStore(s3Store({ bucket: 'starry-transcripts' }), 32 * 1024 * 1024);
 * ```
 *
 * @throws RangeError when `maxBytes` is not a non-negative number.
 */
export function cachedStore(store: BlobStore, maxBytes = 64 * 1024 * 1024): BlobStore {
  if (!(maxBytes >= 0))
    throw new RangeError(`cachedStore: maxBytes must be a non-negative number of bytes, got ${maxBytes}`);
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  const blobs = new Map<string, Buffer>();
  const reading = new Map<string, Promise<Buffer>>();
  let size = 0;

  const recall = (key: string): Buffer | undefined => {
    const bytes = blobs.get(key);
    if (bytes) {
      blobs.delete(key);
      blobs.set(key, bytes);
    }
    return bytes;
  };
  // Kept as a copy: a caller may change the buffer it gave or got; the cache's must not change.
  const remember = (key: string, bytes: Buffer) => {
    if (bytes.length > maxBytes || blobs.has(key)) return;
    blobs.set(key, Buffer.from(bytes));
    size += bytes.length;
    for (const [old, b] of blobs) {
      if (size <= maxBytes) break;
      blobs.delete(old);
      size -= b.length;
    }
  };

  // Keyed by space and hash: a tenant's cached blob is never another tenant's hit.
  const keyOf = (hash: string, space: string | undefined) => `${spacePrefix(space)}${hash}`;

  return {
    where: store.where,
    ...(store.dir ? { dir: store.dir } : {}),
    async put(content, space) {
      const bytes = blobBytes(content);
      const hash = sha256Hex(bytes);
      const key = keyOf(hash, space);
      if (recall(key)) return hash;
      const stored = await store.put(bytes, space);
      if (stored !== hash)
        throw new Error(`${store.where} stored a blob as sha256:${stored}, but its content hashes to sha256:${hash}`);
      remember(key, bytes);
      return hash;
    },
    async get(hash, space) {
      const key = keyOf(checkBlobHash(hash), space);
      const cached = recall(key);
      if (cached) return Buffer.from(cached);
      let read = reading.get(key);
      if (!read) {
        read = store.get(hash, space).finally(() => reading.delete(key));
        reading.set(key, read);
      }
      const bytes = await read;
      remember(key, bytes);
      return Buffer.from(bytes);
    },
  };
}
