import net from 'node:net';
import { kernelQueue, normalAddress, socketFlow } from './socket-flow';

/** A server socket and a client that never reads (its socket paused before anything arrives). */
async function pair(
  listen = '127.0.0.1',
  connect = listen,
): Promise<{ server: net.Socket; client: net.Socket; close: () => void }> {
  const listener = net.createServer();
  await new Promise<void>((r) => listener.listen(0, listen, r));
  const accepted = new Promise<net.Socket>((r) => listener.once('connection', r));
  const client = net.connect((listener.address() as net.AddressInfo).port, connect);
  client.pause();
  const server = await accepted;
  return {
    server,
    client,
    close: () => {
      client.destroy();
      server.destroy();
      listener.close();
    },
  };
}

const settle = () => new Promise((r) => setTimeout(r, 100));

describe('socketFlow: what a client has taken, seen from the server', () => {
  it.each([
    ['IPv4', '127.0.0.1', '127.0.0.1'],
    ['IPv6', '::1', '::1'],
    ['IPv4 on a dual-stack listener', '::', '127.0.0.1'],
  ])(
    'counts what a client that reads nothing leaves in the kernel, where no write blocks (%s)',
    async (_, listen, connect) => {
      const { server, close } = await pair(listen, connect);
      try {
        // Far more than the client's receive buffer, far less than the server's send buffer on loopback.
        server.write(Buffer.alloc(1024 * 1024, 'a'));
        await settle();
        const flow = socketFlow(server);
        expect(flow.written).toBe(1024 * 1024);
        if (process.platform === 'linux') {
          expect(kernelQueue(server)).toBeGreaterThan(256 * 1024);
          expect(flow.waiting).toBeGreaterThan(256 * 1024);
        }
      } finally {
        close();
      }
    },
  );

  it('sees nothing waiting once a reading client has taken it all', async () => {
    const { server, client, close } = await pair();
    try {
      client.resume();
      server.write(Buffer.alloc(64 * 1024, 'a'));
      await settle();
      expect(socketFlow(server)).toMatchObject({ written: 64 * 1024, waiting: 0 });
    } finally {
      close();
    }
  });
});

describe('normalAddress', () => {
  it('writes IPv4, IPv4-mapped and IPv6 addresses as /proc/net/tcp6 reads back', () => {
    expect(normalAddress('127.0.0.1')).toBe('127.0.0.1');
    expect(normalAddress('::ffff:10.0.0.7')).toBe('10.0.0.7');
    expect(normalAddress('::1')).toBe('0:0:0:0:0:0:0:1');
    expect(normalAddress('fe80::a:0BC')).toBe('fe80:0:0:0:0:0:a:bc');
  });
});
