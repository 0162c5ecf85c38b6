import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BlobMissingError, checkBlobHash, inSpace, sha256Hex } from './blob-store';
import { cachedStore } from './cached';
import { localDirStore } from './local';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'starry-blobs-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every file below the store's directory, relative to it. */
async function files(): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

describe('localDirStore', () => {
  it('gives back what was put, a string as its UTF-8 bytes and bytes as they were', async () => {
    const store = localDirStore(dir);
    const text = '{"role":"tool","content":"héllo ✓"}';
    expect((await store.get(await store.put(text))).toString('utf8')).toBe(text);
    const bytes = new Uint8Array([0, 255, 1, 128, 10]);
    expect([...(await store.get(await store.put(bytes)))]).toEqual([...bytes]);
  });

  it('names a blob by the SHA-256 of its content and keeps it at <dir>/<first 2 hex>/<hash>', async () => {
    const hash = await localDirStore(dir).put('abc');
    expect(hash).toBe(createHash('sha256').update('abc').digest('hex'));
    expect(hash).toBe(sha256Hex(Buffer.from('abc')));
    expect(await files()).toEqual([path.join(hash.slice(0, 2), hash)]);
  });

  it("keeps a tenant's blobs in its own space, where no other tenant's read and no shared read finds them", async () => {
    const store = cachedStore(localDirStore(dir));
    const acme = inSpace(store, 'acme');
    const hash = await acme.put('acme only');
    expect((await acme.get(hash)).toString()).toBe('acme only');
    expect(await files()).toEqual([path.join('tenants', 'acme', hash.slice(0, 2), hash)]);
    // The same hash asked of another space (or of the shared part) is missing there, cache or not.
    await expect(inSpace(store, 'globex').get(hash)).rejects.toBeInstanceOf(BlobMissingError);
    await expect(store.get(hash)).rejects.toBeInstanceOf(BlobMissingError);
    await expect(localDirStore(dir).get(hash, 'globex')).rejects.toBeInstanceOf(BlobMissingError);
    // A space is a tenant id: one path segment, never a way out of the store.
    expect(() => inSpace(store, '../x')).toThrow(/invalid store space/);
    await expect(localDirStore(dir).get(hash, '..')).rejects.toThrow(/invalid store space/);
  });

  it('stores the same content once, however it is given and however often', async () => {
    const store = localDirStore(dir);
    const hashes = [
      await store.put('same'),
      await store.put(Buffer.from('same')),
      await store.put(new TextEncoder().encode('same')),
    ];
    expect(new Set(hashes).size).toBe(1);
    expect(await files()).toHaveLength(1);
  });

  it('writes files only its owner may read, in directories only its owner may enter', async () => {
    const hash = await localDirStore(path.join(dir, 'blobs')).put('secret tool output');
    expect((await stat(path.join(dir, 'blobs', hash.slice(0, 2), hash))).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(dir, 'blobs', hash.slice(0, 2)))).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(dir, 'blobs'))).mode & 0o777).toBe(0o700);
  });

  it('takes concurrent puts of one content: one whole file, no temporary file left', async () => {
    const store = localDirStore(dir);
    const content = 'x'.repeat(1 << 20);
    const hashes = await Promise.all(Array.from({ length: 16 }, () => store.put(content)));
    expect(new Set(hashes)).toEqual(new Set([sha256Hex(content)]));
    expect(await files()).toHaveLength(1);
    expect((await store.get(hashes[0]!)).toString()).toBe(content);
  });

  it('writes nothing when another process stored the content already, and leaves no temporary file', async () => {
    const hash = await localDirStore(dir).put('written by another worker');
    // A second store on the directory (another process): its own caches are empty.
    expect(await localDirStore(dir).put('written by another worker')).toBe(hash);
    expect(await files()).toEqual([path.join(hash.slice(0, 2), hash)]);
  });

  it('makes its directories again when they were removed after its first put', async () => {
    const store = localDirStore(path.join(dir, 'blobs'));
    const hash = await store.put('kept twice');
    await rm(path.join(dir, 'blobs'), { recursive: true });
    expect(await store.put('kept twice')).toBe(hash);
    expect((await store.get(hash)).toString()).toBe('kept twice');
    expect((await stat(path.join(dir, 'blobs', hash.slice(0, 2)))).mode & 0o777).toBe(0o700);
  });

  it('says which blob is missing from which directory, and why that may be', async () => {
    const store = localDirStore(dir);
    const hash = sha256Hex('never stored');
    const err = await store.get(hash).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobMissingError);
    expect(err).toMatchObject({ code: 'E_BLOB_MISSING', hash, where: `directory ${dir}` });
    expect((err as Error).message).toBe(
      `transcript blob sha256:${hash} is missing from directory ${dir}: it was deleted, ` +
        'or this process uses another store than the worker that wrote it (STARRY_STORE_BUCKET / STARRY_STORE_DIR)',
    );
  });

  it('refuses a corrupted blob rather than return other bytes, and rewrites it on the next put', async () => {
    const store = localDirStore(dir);
    const hash = await store.put('the original');
    const file = path.join(dir, hash.slice(0, 2), hash);
    await writeFile(file, 'the tampered');
    await expect(store.get(hash)).rejects.toMatchObject({
      code: 'E_BLOB_CORRUPTED',
      message: expect.stringMatching(
        new RegExp(
          `^transcript blob sha256:${hash} in directory .* is corrupted: its bytes hash to sha256:${sha256Hex('the tampered')}`,
        ),
      ),
    });
    // A file cut short (a crash before the data reached the disk) is written again by the next put.
    await writeFile(file, '');
    await expect(store.get(hash)).rejects.toThrow(/is corrupted: its content is empty/);
    await store.put('the original');
    expect((await store.get(hash)).toString()).toBe('the original');
  });

  it('refuses anything but a SHA-256 as a hash, before it touches the disk', async () => {
    const store = localDirStore(path.join(dir, 'store'));
    await writeFile(path.join(dir, 'passwd'), 'root:x:0:0');
    for (const hash of [
      '../../etc/passwd',
      '../passwd',
      sha256Hex('a').toUpperCase(),
      sha256Hex('a').slice(1),
      `${sha256Hex('a')}/`,
      '',
    ]) {
      await expect(store.get(hash)).rejects.toThrow(RangeError);
    }
    await expect(store.get('../../etc/passwd')).rejects.toThrow(
      'invalid blob hash "../../etc/passwd": a blob is named by its SHA-256, 64 lowercase hex digits',
    );
    expect(() => checkBlobHash(undefined)).toThrow(/invalid blob hash undefined/);
    expect(() => checkBlobHash('a'.repeat(500))).toThrow(/invalid blob hash "a{80}…"/);
  });
});
