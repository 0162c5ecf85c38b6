/**
 * The S3 blob store against a real S3 wire implementation (a local `moto` server, started here): what
 * a worker writes, any worker reads back; content is stored once under its hash; a missing key is a
 * BlobMissingError that names the bucket and prefix; the environment picks S3 when it names a bucket.
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { BlobMissingError, s3Store, sha256Hex, storeFromEnv } from '../../activities/store';
import { uniqueId } from '../helpers/harness';
import { startMoto, type Moto } from '../helpers/moto';

let moto: Moto;
let s3: S3Client;

beforeAll(async () => {
  moto = await startMoto();
  s3 = new S3Client({
    endpoint: moto.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  });
});
afterAll(async () => {
  s3?.destroy();
  await moto?.stop();
});

/** A new bucket (moto keeps buckets for the life of the server). */
async function bucket(): Promise<string> {
  const name = uniqueId('starry-blobs')
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 63);
  await s3.send(new CreateBucketCommand({ Bucket: name }));
  return name;
}

async function keys(name: string): Promise<string[]> {
  return ((await s3.send(new ListObjectsV2Command({ Bucket: name }))).Contents ?? []).map((o) => o.Key ?? '');
}

describe('the S3 blob store', () => {
  it('gives back what was put, as the object <prefix><sha256>', async () => {
    const name = await bucket();
    const store = s3Store({ bucket: name, prefix: 'blobs/', client: s3 });
    const text = JSON.stringify({ role: 'tool', content: 'ü'.repeat(70_000) });
    const hash = await store.put(text);
    expect(hash).toBe(sha256Hex(text));
    expect((await store.get(hash)).toString('utf8')).toBe(text);
    const bytes = new Uint8Array([0, 1, 254, 255]);
    expect([...(await store.get(await store.put(bytes)))]).toEqual([...bytes]);
    expect((await keys(name)).sort()).toEqual([`blobs/${hash}`, `blobs/${sha256Hex(bytes)}`].sort());
  });

  it('stores the same content once, for sequential and concurrent puts', async () => {
    const name = await bucket();
    const store = s3Store({ bucket: name, client: s3 });
    const hashes = [
      await store.put('same'),
      ...(await Promise.all([store.put('same'), store.put(Buffer.from('same')), store.put('same')])),
    ];
    expect(new Set(hashes)).toEqual(new Set([sha256Hex('same')]));
    expect(await keys(name)).toEqual([sha256Hex('same')]);
  });

  it('says which blob is missing from which bucket and prefix', async () => {
    const name = await bucket();
    const store = s3Store({ bucket: name, prefix: 'blobs/', client: s3 });
    const hash = await store.put('deleted later');
    await s3.send(new DeleteObjectCommand({ Bucket: name, Key: `blobs/${hash}` }));
    const err = await store.get(hash).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobMissingError);
    expect(err).toMatchObject({ code: 'E_BLOB_MISSING', hash, where: `s3://${name}/blobs/` });
    expect((err as Error).message).toContain(
      `transcript blob sha256:${hash} is missing from s3://${name}/blobs/: it was deleted`,
    );
  });

  it('refuses an object whose bytes are not its name, and a missing bucket is not a missing blob', async () => {
    const name = await bucket();
    const store = s3Store({ bucket: name, client: s3 });
    const hash = sha256Hex('the original');
    await s3.send(new PutObjectCommand({ Bucket: name, Key: hash, Body: 'the tampered' }));
    await expect(store.get(hash)).rejects.toMatchObject({
      code: 'E_BLOB_CORRUPTED',
      message: expect.stringContaining(`sha256:${hash} in s3://${name}/ is corrupted`),
    });
    await expect(store.get('../other-bucket/key')).rejects.toThrow(RangeError);
    const nowhere = s3Store({ bucket: `${name}-none`, client: s3 });
    await expect(nowhere.get(hash)).rejects.toMatchObject({ name: 'NoSuchBucket' });
  });

  it('is what storeFromEnv picks when STARRY_STORE_BUCKET is set (prefix blobs/ by default), one store per place', async () => {
    const name = await bucket();
    // The client's credentials come from the SDK's default chain, which reads process.env.
    const saved = { ...process.env };
    Object.assign(process.env, moto.env);
    try {
      const env = { ...moto.env, STARRY_STORE_BUCKET: name };
      const store = storeFromEnv(env);
      expect(store.where).toBe(`s3://${name}/blobs/`);
      expect(storeFromEnv({ ...env })).toBe(store);
      const hash = await store.put('through the environment');
      expect(await keys(name)).toEqual([`blobs/${hash}`]);
      // Another process (no cache) reads it back through its own store.
      expect((await s3Store({ bucket: name, prefix: 'blobs/', client: s3 }).get(hash)).toString()).toBe(
        'through the environment',
      );
      expect(storeFromEnv({ ...env, STARRY_STORE_PREFIX: 'other/' }).where).toBe(`s3://${name}/other/`);
      expect(storeFromEnv({ ...env, STARRY_STORE_BUCKET: '', STARRY_STORE_DIR: '/tmp/starry-blobs-x' }).where).toBe(
        'directory /tmp/starry-blobs-x',
      );
    } finally {
      for (const k of Object.keys(moto.env)) if (saved[k] === undefined) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
});
