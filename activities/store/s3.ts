/**
 * The S3 driver: workers on several machines (the CDK stack's Fargate service) share one bucket. A
 * blob is the object `<prefix><hash>`; a tenant's, `<prefix>tenants/<tenant>/<hash>`.
 */
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  BlobMissingError,
  blobBytes,
  checkBlobHash,
  sha256Hex,
  spacePrefix,
  verifiedBlob,
  type BlobStore,
} from './blob-store';

export interface S3StoreOptions {
  bucket: string;
  /** Prepended to the hash to make the key, as given (`blobs/` gives `blobs/<hash>`); default none. */
  prefix?: string;
  /** Default: `s3ClientFromEnv()` (the default credential chain, `AWS_ENDPOINT_URL`), made at the first call. */
  client?: S3Client;
}

/**
 * A blob store in an S3 bucket (or anything that speaks S3).
 *
 * ```ts
 * const store = s3Store({ bucket: 'starry-transcripts', prefix: 'blobs/' });
 * ```
 */
export function s3Store(opts: S3StoreOptions): BlobStore {
  const { bucket, prefix = '' } = opts;
  const where = `s3://${bucket}/${prefix}`;
  let client = opts.client;
  const s3 = () => (client ??= s3ClientFromEnv());
  return {
    where,
    async put(content, space) {
      const bytes = blobBytes(content);
      const hash = sha256Hex(bytes);
      // Always a plain PUT, never HEAD first: the cache in front (cachedStore) already skips content
      // this process stored, so what reaches S3 is nearly always new, where HEAD + PUT is two round
      // trips and two requests instead of one. Overwriting an object with the same bytes is harmless
      // (its key is its hash; the bucket is not versioned). The checksum makes S3 refuse a body that
      // was damaged on the way.
      await s3().send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: `${prefix}${spacePrefix(space)}${hash}`,
          Body: bytes,
          ContentType: 'application/octet-stream',
          ChecksumSHA256: Buffer.from(hash, 'hex').toString('base64'),
        }),
      );
      return hash;
    },
    async get(hash, space) {
      const key = `${prefix}${spacePrefix(space)}${checkBlobHash(hash)}`;
      let bytes: Buffer;
      try {
        const res = await s3().send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        bytes = Buffer.from((await res.Body?.transformToByteArray()) ?? []);
      } catch (err) {
        const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
        // A missing key is 404 only for a role that may list the bucket (grantReadWrite includes
        // s3:ListBucket); without it S3 answers 403, which stays an access error. A missing bucket is not a missing
        // blob.
        if (e.name !== 'NoSuchBucket' && (e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404))
          throw new BlobMissingError(hash, where, { cause: err });
        throw err;
      }
      return verifiedBlob(hash, bytes, where);
    },
  };
}

/**
 * An S3 client from the environment: credentials and region from the AWS SDK's default chain;
 * `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (a local S3 such as moto or MinIO) with path-style
 * addressing, since such a server has no per-bucket host names.
 */
export function s3ClientFromEnv(env: NodeJS.ProcessEnv = process.env): S3Client {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL;
  return new S3Client({
    ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}),
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
  });
}
