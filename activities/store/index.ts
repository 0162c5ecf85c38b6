/**
 * The blob store a process uses, chosen by its environment (workers/env.ts lists the variables):
 * `STARRY_STORE_BUCKET` (and `STARRY_STORE_PREFIX`, default `blobs/`) for S3, else `STARRY_STORE_DIR`,
 * else `blobs/` in the dev server's folder (`.temporal/`). Either way behind one in-process cache.
 */
import path from 'node:path';
import { stateDir } from '../../dev/paths';
import type { BlobStore } from './blob-store';
import { cachedStore } from './cached';
import { localDirStore } from './local';
import { s3ClientFromEnv, s3Store } from './s3';

export {
  BlobCorruptedError,
  BlobError,
  BlobMissingError,
  blobBytes,
  checkBlobHash,
  inSpace,
  sha256Hex,
  spacePrefix,
  verifiedBlob,
  type BlobStore,
} from './blob-store';
export { cachedStore } from './cached';
export { localDirStore } from './local';
export { s3ClientFromEnv, s3Store, type S3StoreOptions } from './s3';

/** The default key prefix in a bucket. */
export const DEFAULT_STORE_PREFIX = 'blobs/';

// One store (so one cache) per place, for the life of the process.
const stores = new Map<string, BlobStore>();

/**
 * The store the environment names, the same object for the same place on every call.
 *
 * ```ts
 * const store = storeFromEnv(); // S3 on the deployed workers, .temporal/blobs on a laptop
 * ```
 */
export function storeFromEnv(env: NodeJS.ProcessEnv = process.env): BlobStore {
  const bucket = env.STARRY_STORE_BUCKET?.trim();
  if (bucket) {
    const prefix = env.STARRY_STORE_PREFIX?.trim() || DEFAULT_STORE_PREFIX;
    // The endpoint is part of the place: the same bucket name on a local S3 is another bucket.
    const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || 'aws';
    return memo(`s3 ${endpoint} ${bucket}/${prefix}`, () => s3Store({ bucket, prefix, client: s3ClientFromEnv(env) }));
  }
  const dir = path.resolve(env.STARRY_STORE_DIR?.trim() || path.join(stateDir(), 'blobs'));
  return memo(`dir ${dir}`, () => localDirStore(dir));
}

function memo(key: string, make: () => BlobStore): BlobStore {
  let store = stores.get(key);
  if (!store) stores.set(key, (store = cachedStore(make())));
  return store;
}
