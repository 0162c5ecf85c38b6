/**
 * Which server a command talks to: `--address` and `--namespace` win over TEMPORAL_ADDRESS and
 * TEMPORAL_NAMESPACE, a server this folder's `starry dev` did not start is named on stderr, and this
 * folder's own is used quietly.
 */
import { freePort } from '../../dev/dev-server';
import { address, privateDir, uniqueId } from '../helpers/harness';
import { starryAsync } from '../helpers/cli';

jest.setTimeout(120_000);

const QUEUE = uniqueId('cli-server');
// The line on: the helpers turn it off for the other files.
const LOUD = { STARRY_QUIET: '' };
const line = (at: string, ns = 'default') => `starry: using Temporal at ${at} namespace ${ns}\n`;

describe('--address and --namespace', () => {
  it('--address wins over TEMPORAL_ADDRESS, and the command names the server it talks to', async () => {
    const dead = `127.0.0.1:${await freePort()}`;
    const toDead = await starryAsync(['list', '--address', dead], QUEUE, LOUD);
    expect(toDead.code).toBe(1);
    expect(toDead.stderr).toMatch(new RegExp(`^${esc(line(dead))}starry: cannot reach Temporal at ${esc(dead)} `));

    const toLive = await starryAsync(['list', '--address', address()], QUEUE, { ...LOUD, TEMPORAL_ADDRESS: dead });
    expect(toLive).toMatchObject({ code: 0, stderr: line(address()) });
  });

  it('--namespace (-n) wins over TEMPORAL_NAMESPACE', async () => {
    for (const flag of ['--namespace', '-n']) {
      const r = await starryAsync(['list', flag, 'no-such-namespace'], QUEUE, {
        ...LOUD,
        TEMPORAL_NAMESPACE: 'default',
      });
      expect([flag, r.code]).toEqual([flag, 1]);
      expect(r.stderr).toMatch(new RegExp(`^${esc(line(address(), 'no-such-namespace'))}starry: .*no-such-namespace`));
    }
  });

  it('refuses a malformed address with what it takes', async () => {
    const r = await starryAsync(['list', '--address', 'http://temporal:7233'], QUEUE);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain('must be HOST:PORT, e.g. 127.0.0.1:7233 or temporal.example.com:7233 (no scheme)');
  });

  it('refuses them for `starry dev`, which uses its own server, naming --port', async () => {
    const r = await starryAsync(['dev', '--address', address()], QUEUE);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(
      /^starry: `starry dev` uses this folder's own dev server .* choose its port with --port N/,
    );
  });
});

describe("this folder's own dev server", () => {
  it('is used quietly; the same server seen from another folder is named', async () => {
    const mine = privateDir('starry-state');
    const port = await freePort();
    const at = `127.0.0.1:${port}`;
    try {
      const start = await starryAsync(['server', 'start', '--port', String(port)], QUEUE, { STARRY_STATE_DIR: mine });
      expect(start.code).toBe(0);
      const own = await starryAsync(['list', '--address', at], QUEUE, { ...LOUD, STARRY_STATE_DIR: mine });
      expect(own).toMatchObject({ code: 0, stderr: '' });
      const other = await starryAsync(['list', '--address', at], QUEUE, {
        ...LOUD,
        STARRY_STATE_DIR: privateDir('starry-state'),
      });
      expect(other).toMatchObject({ code: 0, stderr: line(at) });
    } finally {
      await starryAsync(['server', 'stop', '--port', String(port)], QUEUE, { STARRY_STATE_DIR: mine });
    }
  });
});

function esc(s: string): string {
  return s.replace(/[\\[\]().*+?^$|{}]/g, '\\$&');
}
