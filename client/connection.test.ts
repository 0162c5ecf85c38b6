import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporalEnv } from './connection';

describe('temporalEnv', () => {
  it('defaults to the local dev server', () => {
    expect(temporalEnv({})).toEqual({ address: '127.0.0.1:7233', namespace: 'default' });
  });

  it('takes an API key with TLS', () => {
    expect(
      temporalEnv({
        TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
        TEMPORAL_NAMESPACE: 'ns.acct',
        TEMPORAL_API_KEY: 'k',
      }),
    ).toEqual({ address: 'ns.acct.tmprl.cloud:7233', namespace: 'ns.acct', apiKey: 'k', tls: true });
  });

  it('takes an mTLS pair as PEM content (an ECS secret) or as file paths', () => {
    const cert = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const key = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';
    expect(temporalEnv({ TEMPORAL_TLS_CERT: cert, TEMPORAL_TLS_KEY: key }).tls).toEqual({
      clientCertPair: { crt: Buffer.from(cert), key: Buffer.from(key) },
    });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'starry-tls-'));
    writeFileSync(path.join(dir, 'c.pem'), cert);
    writeFileSync(path.join(dir, 'k.pem'), key);
    expect(
      temporalEnv({ TEMPORAL_TLS_CERT: path.join(dir, 'c.pem'), TEMPORAL_TLS_KEY: path.join(dir, 'k.pem') }).tls,
    ).toEqual({ clientCertPair: { crt: Buffer.from(cert), key: Buffer.from(key) } });
  });
});
