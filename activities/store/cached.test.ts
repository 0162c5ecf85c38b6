import { BlobMissingError, blobBytes, sha256Hex, type BlobStore } from './blob-store';
import { cachedStore } from './cached';

/** A backend in memory that counts its calls (a test double of the BlobStore interface). */
function countingStore() {
  const blobs = new Map<string, Buffer>();
  const calls = { put: 0, get: 0 };
  const store: BlobStore = {
    where: 'memory',
    async put(content) {
      calls.put++;
      const bytes = Buffer.from(blobBytes(content));
      const hash = sha256Hex(bytes);
      blobs.set(hash, bytes);
      return hash;
    },
    async get(hash) {
      calls.get++;
      await new Promise((r) => setImmediate(r));
      const bytes = blobs.get(hash);
      if (!bytes) throw new BlobMissingError(hash, 'memory');
      return Buffer.from(bytes);
    },
  };
  return { store, calls, blobs };
}

describe('cachedStore', () => {
  it('answers a get of a cached hash without reaching the store', async () => {
    const { store, calls } = countingStore();
    const cached = cachedStore(store);
    const hash = await cached.put('hello');
    expect((await cached.get(hash)).toString()).toBe('hello');
    expect((await cached.get(hash)).toString()).toBe('hello');
    expect(calls).toEqual({ put: 1, get: 0 });
  });

  it('reads a blob it does not hold from the store once, even for concurrent gets', async () => {
    const { store, calls } = countingStore();
    const hash = await store.put('written by another worker');
    const cached = cachedStore(store);
    const got = await Promise.all([cached.get(hash), cached.get(hash), cached.get(hash)]);
    expect(got.map(String)).toEqual(Array(3).fill('written by another worker'));
    expect((await cached.get(hash)).toString()).toBe('written by another worker');
    expect(calls.get).toBe(1);
  });

  it('skips the store on a put of content it holds', async () => {
    const { store, calls } = countingStore();
    const cached = cachedStore(store);
    const hashes = [
      await cached.put('same'),
      await cached.put(Buffer.from('same')),
      await cached.put(new TextEncoder().encode('same')),
    ];
    expect(hashes).toEqual(Array(3).fill(sha256Hex('same')));
    expect(calls.put).toBe(1);
  });

  it('evicts the least recently used blobs when it holds more bytes than allowed', async () => {
    const { store, calls } = countingStore();
    const cached = cachedStore(store, 10);
    const a = await cached.put('aaaa');
    const b = await cached.put('bbbb');
    await cached.get(a); // a is now more recent than b
    await cached.put('cccc'); // 12 bytes: b goes
    expect(calls.get).toBe(0);
    await cached.get(a);
    expect(calls.get).toBe(0);
    await cached.get(b);
    expect(calls.get).toBe(1);
    // A blob larger than the whole cache is stored and read, never kept.
    const big = await cached.put('x'.repeat(11));
    await cached.get(big);
    await cached.get(big);
    expect(calls).toEqual({ put: 4, get: 3 });
  });

  it('hands out copies: changing a buffer given or got does not change the cache', async () => {
    const { store } = countingStore();
    const cached = cachedStore(store);
    const given = Buffer.from('immutable');
    const hash = await cached.put(given);
    given.fill(0);
    (await cached.get(hash)).fill(0);
    expect((await cached.get(hash)).toString()).toBe('immutable');
  });

  it('passes the store’s errors through and caches nothing for them', async () => {
    const { store, calls, blobs } = countingStore();
    const cached = cachedStore(store);
    const hash = sha256Hex('late');
    await expect(cached.get(hash)).rejects.toBeInstanceOf(BlobMissingError);
    blobs.set(hash, Buffer.from('late'));
    expect((await cached.get(hash)).toString()).toBe('late');
    expect(calls.get).toBe(2);
    await expect(cached.get('../x')).rejects.toThrow(RangeError);
    expect(calls.get).toBe(2);
    expect(cached.where).toBe('memory');
  });

  it('refuses a size that is not a number of bytes', () => {
    expect(() => cachedStore(countingStore().store, -1)).toThrow(RangeError);
    expect(() => cachedStore(countingStore().store, Number.NaN)).toThrow(
      /maxBytes must be a non-negative number of bytes, got NaN/,
    );
  });
});
