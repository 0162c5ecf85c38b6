/**
 * The content-addressed blob store (issue 13): transcripts live outside Temporal's event history and
 * the history carries their SHA-256. Content is immutable and named by its hash, so identical content
 * is stored once, a put can be repeated (activity retries) or raced (two workers) harmlessly, and every
 * read is checked against its name. Drivers: `localDirStore` (local.ts), `s3Store` (s3.ts), and the
 * in-process cache in front of either (`cachedStore`, cached.ts).
 */
import { createHash } from 'node:crypto';

/**
 * Where content-addressed blobs live.
 *
 * ```ts
 * const hash = await store.put('{"role":"user","content":"hi"}');
 * const bytes = await store.get(hash); // the same bytes, or BlobMissingError
 * ```
 */
export interface BlobStore {
  /** Where blobs live, for error messages: e.g. `directory /x/.temporal/blobs` or `s3://bucket/prefix/`. */
  readonly where: string;
  /** The local directory it writes, when it is one: no workspace root may hold it (workers/own-paths.ts). */
  readonly dir?: string;
  /**
   * Store content under its SHA-256 (lowercase hex, 64 chars) once; returns the hash. Idempotent; concurrent puts of
   * the same content are safe. `space`: a tenant's own part of the store (`tenants/<space>/`), never
   * another's; absent, the store's shared part (plain agents).
   */
  put(content: string | Uint8Array, space?: string): Promise<string>;
  /**
   * The bytes stored under `hash` in `space`. Throws BlobMissingError when there is none; throws a clear Error when
   * the stored bytes do not hash to `hash` (corrupted).
   */
  get(hash: string, space?: string): Promise<Buffer>;
}

/** A space's name: a tenant id, one path segment (core/tenant.ts), never `.` or `..`. */
const SPACE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * Where a space's blobs lie below a store's own location: `tenants/<space>/`, or nothing for the shared
 * part. Spaces come from workflow ids: checked before they name a path or a key.
 *
 * ```ts
 * spacePrefix('acme') // 'tenants/acme/'
 * ```
 * @throws RangeError naming a value that is not a space.
 */
export function spacePrefix(space: string | undefined): string {
  if (space === undefined) return '';
  if (!SPACE.test(space))
    throw new RangeError(`invalid store space ${JSON.stringify(space.slice(0, 80))}: a tenant id`);
  return `tenants/${space}/`;
}

/**
 * The store seen from one space: every put and get goes to it (the transcripts of one tenant's task).
 *
 * ```ts
 * const acme = inSpace(store, 'acme'); // acme.get(hash) never reads another tenant's blob
 * ```
 */
export function inSpace(store: BlobStore, space: string | undefined): BlobStore {
  if (space === undefined) return store;
  spacePrefix(space);
  return {
    where: `${store.where} (tenant ${space})`,
    ...(store.dir ? { dir: store.dir } : {}),
    put: (content) => store.put(content, space),
    get: (hash) => store.get(hash, space),
  };
}

/** A blob store's failure: which blob, in which store. */
export abstract class BlobError extends Error {
  abstract readonly code: string;

  constructor(
    readonly hash: string,
    readonly where: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * No blob under this hash in this store: deleted, or written to another store. A task whose
 * transcript lost a blob cannot go on, so the message says which blob, which store, and what to check.
 *
 * ```ts
 * if ((err as { code?: string }).code === 'E_BLOB_MISSING') …
 * ```
 */
export class BlobMissingError extends BlobError {
  readonly code = 'E_BLOB_MISSING';
  override readonly name = 'BlobMissingError';

  constructor(hash: string, where: string, options?: { cause?: unknown }) {
    super(
      hash,
      where,
      `transcript blob sha256:${hash} is missing from ${where}: it was deleted, or this process uses another store than the worker that wrote it (STARRY_STORE_BUCKET / STARRY_STORE_DIR)`,
      options,
    );
  }
}

/**
 * The bytes stored under a hash do not hash to it: the store was written to by something else, or the
 * disk or object was damaged. Never returned as content: a transcript must not change silently.
 */
export class BlobCorruptedError extends BlobError {
  readonly code = 'E_BLOB_CORRUPTED';
  override readonly name = 'BlobCorruptedError';

  /** `actual`: what the stored bytes hash to. */
  constructor(
    hash: string,
    where: string,
    readonly actual: string,
  ) {
    const what = actual === EMPTY_SHA256 ? 'content is empty' : `bytes hash to sha256:${actual}`;
    super(
      hash,
      where,
      `transcript blob sha256:${hash} in ${where} is corrupted: its ${what}. Restore it from a backup, or delete it so that the next put of that content writes it again`,
    );
  }
}

const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const BLOB_HASH = /^[0-9a-f]{64}$/;

/**
 * The content's SHA-256 as lowercase hex: its name in every store. A string is hashed as UTF-8.
 *
 * ```ts
 * sha256Hex('') // 'e3b0c442…b855'
 * ```
 */
export function sha256Hex(content: string | Uint8Array): string {
  return createHash('sha256').update(content).digest('hex');
}

/**
 * The hash, when it is one (64 lowercase hex digits). Hashes come from workflow histories, which anyone
 * with access to the namespace can write: never trust one as a path or a key before this check.
 *
 * ```ts
 * checkBlobHash('../../etc/passwd') // throws RangeError
 * ```
 *
 * @throws RangeError naming the value.
 */
export function checkBlobHash(hash: unknown): string {
  if (typeof hash === 'string' && BLOB_HASH.test(hash)) return hash;
  const shown =
    typeof hash === 'string' ? JSON.stringify(hash.length > 80 ? `${hash.slice(0, 80)}…` : hash) : String(hash);
  throw new RangeError(`invalid blob hash ${shown}: a blob is named by its SHA-256, 64 lowercase hex digits`);
}

/** The content as bytes (a string as UTF-8), without copying a Buffer or Uint8Array. */
export function blobBytes(content: string | Uint8Array): Buffer {
  if (typeof content === 'string') return Buffer.from(content, 'utf8');
  return Buffer.isBuffer(content) ? content : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
}

/**
 * The bytes a driver read under `hash`, after checking that they hash to it.
 *
 * @throws BlobCorruptedError when they do not.
 */
export function verifiedBlob(hash: string, bytes: Buffer, where: string): Buffer {
  const actual = sha256Hex(bytes);
  if (actual !== hash) throw new BlobCorruptedError(hash, where, actual);
  return bytes;
}
