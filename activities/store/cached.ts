/**
 * An in-process cache in front of a blob store. Blobs are immutable and named by their hash, so a
 * cached blob is never stale: the cache needs no invalidation, only a size limit (least recently used
 * blobs go first, counted in bytes).
 */
import { blobBytes, checkBlobHash, sha256Hex, type BlobStore } from './blob-store';

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

  const recall = (hash: string): Buffer | undefined => {
    const bytes = blobs.get(hash);
    if (bytes) {
      blobs.delete(hash);
      blobs.set(hash, bytes);
    }
    return bytes;
  };
  // Kept as a copy: a caller may change the buffer it gave or got; the cache's must not change.
  const remember = (hash: string, bytes: Buffer) => {
    if (bytes.length > maxBytes || blobs.has(hash)) return;
    blobs.set(hash, Buffer.from(bytes));
    size += bytes.length;
    for (const [old, b] of blobs) {
      if (size <= maxBytes) break;
      blobs.delete(old);
      size -= b.length;
    }
  };

  return {
    where: store.where,
    async put(content) {
      const bytes = blobBytes(content);
      const hash = sha256Hex(bytes);
      if (recall(hash)) return hash;
      const stored = await store.put(bytes);
      if (stored !== hash)
        throw new Error(`${store.where} stored a blob as sha256:${stored}, but its content hashes to sha256:${hash}`);
      remember(hash, bytes);
      return hash;
    },
    async get(hash) {
      checkBlobHash(hash);
      const cached = recall(hash);
      if (cached) return Buffer.from(cached);
      let read = reading.get(hash);
      if (!read) {
        read = store.get(hash).finally(() => reading.delete(hash));
        reading.set(hash, read);
      }
      const bytes = await read;
      remember(hash, bytes);
      return Buffer.from(bytes);
    },
  };
}
