import {
  DEFAULT_CLIENT_STREAMS,
  DEFAULT_MAX_STREAMS,
  streamCaps,
  streamRefusal,
  type StreamHolder,
} from './stream-caps';

const alice: StreamHolder = { tenant: 'acme', client: 'alice', clientBy: 'sub' };
const caps = streamCaps({ maxStreams: 10, maxStreamsPerTenant: 6, maxStreamsPerClient: 3 });

describe('streamCaps: the shares of a process’s streams', () => {
  it('defaults to 100 in the process, half of them for a tenant and 10 for a client', () => {
    expect(streamCaps({})).toEqual({ process: DEFAULT_MAX_STREAMS, tenant: 50, client: DEFAULT_CLIENT_STREAMS });
  });

  it('keeps the default shares within a small process cap', () => {
    expect(streamCaps({ maxStreams: 8 })).toEqual({ process: 8, tenant: 4, client: 4 });
    expect(streamCaps({ maxStreams: 1 })).toEqual({ process: 1, tenant: 1, client: 1 });
  });

  it('refuses shares that do not nest, naming the setting and what to do', () => {
    expect(() => streamCaps({ maxStreams: 10, maxStreamsPerTenant: 20 })).toThrow(
      /STARRY_API_MAX_STREAMS_PER_TENANT \(20\) is over STARRY_API_MAX_STREAMS \(10\).*lower it/,
    );
    expect(() => streamCaps({ maxStreamsPerTenant: 5, maxStreamsPerClient: 6 })).toThrow(
      /STARRY_API_MAX_STREAMS_PER_CLIENT \(6\) is over the tenant's share \(5\)/,
    );
    expect(() => streamCaps({ maxStreams: 0 })).toThrow(RangeError);
  });
});

describe('streamRefusal: one more stream, or which cap says no', () => {
  it('lets a stream open under every cap', () => {
    expect(streamRefusal({ process: 9, tenant: 5, client: 2 }, caps, alice)).toBeUndefined();
  });

  it('refuses a client over its share with 429, naming it and telling it to close one of its streams', () => {
    expect(streamRefusal({ process: 3, tenant: 3, client: 3 }, caps, alice)).toEqual({
      status: 429,
      cap: 'client',
      detail: expect.stringMatching(/^this client \(sub alice\) holds 3 event streams already.*close one of them/),
    });
    expect(
      streamRefusal({ process: 3, tenant: 0, client: 3 }, caps, { client: '127.0.0.1', clientBy: 'address' })?.detail,
    ).toMatch(/^this client \(address 127\.0\.0\.1\)/);
  });

  it('refuses a tenant over its share with 429, whichever of its clients asks', () => {
    expect(streamRefusal({ process: 6, tenant: 6, client: 0 }, caps, alice)).toMatchObject({
      status: 429,
      cap: 'tenant',
      detail: expect.stringMatching(/^tenant acme holds 6 event streams already/),
    });
  });

  it('has no tenant share without tenants: one tenant may use the whole process', () => {
    expect(
      streamRefusal({ process: 9, tenant: 9, client: 0 }, caps, { client: 'bob', clientBy: 'sub' }),
    ).toBeUndefined();
  });

  it('refuses anyone once the process serves its most, with 503', () => {
    expect(streamRefusal({ process: 10, tenant: 0, client: 0 }, caps, alice)).toMatchObject({
      status: 503,
      cap: 'process',
      detail: expect.stringMatching(/serves 10 event streams already/),
    });
  });
});
