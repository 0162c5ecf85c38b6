import {
  foreignStores,
  identityWithStore,
  pausedCause,
  storeMixMessage,
  storeMixWarning,
  storeOfIdentity,
} from './store-mix';

describe('store mix (workers on one task queue, two transcript stores)', () => {
  it('names the store in the identity and reads it back, once even when named again', () => {
    const id = identityWithStore('42@host', 'directory /a/blobs');
    expect(id).toBe('42@host store=directory /a/blobs');
    expect(storeOfIdentity(id)).toBe('directory /a/blobs');
    expect(identityWithStore(id, 's3://b/blobs/')).toBe('42@host store=s3://b/blobs/');
    expect(storeOfIdentity('42@host')).toBeUndefined();
  });

  it('finds the workers whose store is another, once each, and ignores those that name none', () => {
    const others = foreignStores('directory /a', [
      { identity: '1@h store=directory /a' },
      { identity: '2@h store=directory /b' },
      { identity: '2@h store=directory /b' },
      { identity: '3@old-worker' },
    ]);
    expect(others).toEqual([{ worker: '2@h', store: 'directory /b' }]);
  });

  it('says which blob, both stores, the queue and what to do, and blames neither model nor credentials', () => {
    const message = storeMixMessage({
      hash: 'ab'.repeat(32),
      ours: 'directory /a',
      taskQueue: 'agents',
      others: [{ worker: '2@h', store: 'directory /b' }],
    });
    expect(message).toContain(`sha256:${'ab'.repeat(32)}`);
    expect(message).toContain("this worker's store (directory /a)");
    expect(message).toContain('2@h (directory /b)');
    expect(message).toContain('One task queue needs one store');
    expect(message).toContain('Neither the model nor the credentials are at fault');
    const warning = storeMixWarning({
      ours: 'directory /a',
      taskQueue: 'agents',
      others: [1, 2, 3, 4, 5].map((n) => ({ worker: `${n}@h`, store: `directory /${n}` })),
    });
    expect(warning).toContain('task queue agents');
    expect(warning).toContain('and 2 more');
  });

  it('points an agent paused by a missing blob at the store, any other at the usual causes', () => {
    expect(pausedCause('E_BLOB_MISSING: transcript blob …')).toMatch(/transcript store/);
    expect(pausedCause('E_BLOB_MISSING: …')).not.toMatch(/credentials/);
    expect(pausedCause('E_AUTH: 401')).toMatch(/credentials/);
  });
});
