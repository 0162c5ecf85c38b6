/**
 * What a stream's client has taken, from its socket (core/stream-flow.ts decides what that means): the
 * bytes Node wrote to the socket, less those still in Node's buffers and, on Linux, those the kernel
 * still holds unacknowledged (`tx_queue` of /proc/net/tcp and tcp6). A client that stops reading keeps
 * taking bytes into its own receive buffer, then none: from then on they wait in the server's kernel,
 * megabytes of them on loopback, where no write blocks and only the kernel's queue shows them.
 */
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { FlowSample } from '../core/stream-flow';

/** A look at the socket now. */
export function socketFlow(socket: Socket, now = Date.now()): FlowSample {
  return {
    written: socket.bytesWritten ?? 0,
    waiting: socket.writableLength + (kernelQueue(socket) ?? 0),
    at: now,
  };
}

/** The kernel's tables, read at most this often whatever the number of streams. */
const TABLE_TTL_MS = 200;
let table: { at: number; queues: Map<string, number> | undefined } | undefined;

/** Bytes the kernel holds for the socket's peer (sent and not acknowledged, or not sent yet); undefined where unknown. */
export function kernelQueue(socket: Socket): number | undefined {
  if (process.platform !== 'linux' || !socket.remoteAddress || !socket.localPort || !socket.remotePort)
    return undefined;
  const key = keyOf(socket.localPort, normalAddress(socket.remoteAddress), socket.remotePort);
  const now = Date.now();
  // A socket newer than the table is looked for in a fresh one.
  if (!table || now - table.at > TABLE_TTL_MS || !table.queues?.has(key)) table = { at: now, queues: readQueues() };
  return table.queues?.get(key);
}

const keyOf = (localPort: number, remote: string, remotePort: number) => `${localPort} ${remote} ${remotePort}`;

/** Every TCP socket's send queue by local port and remote address and port; undefined when /proc cannot be read. */
function readQueues(): Map<string, number> | undefined {
  const queues = new Map<string, number>();
  let read = false;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'latin1');
    } catch {
      continue;
    }
    read = true;
    // `sl local_address rem_address st tx_queue:rx_queue …`, addresses as hex words in host order, ports in hex.
    for (const line of text.split('\n').slice(1)) {
      const [, local, remote, , txRx] = line.trim().split(/\s+/);
      if (!local || !remote || !txRx) continue;
      const [, localPort] = local.split(':');
      const [remoteHex, remotePort] = remote.split(':');
      const tx = parseInt(txRx.split(':')[0] ?? '', 16);
      if (!localPort || !remoteHex || !remotePort || Number.isNaN(tx)) continue;
      queues.set(keyOf(parseInt(localPort, 16), procAddress(remoteHex), parseInt(remotePort, 16)), tx);
    }
  }
  return read ? queues : undefined;
}

/** A /proc address (8 or 32 hex digits, each 32-bit word in little-endian order) as normalAddress writes it. */
function procAddress(hex: string): string {
  const bytes: number[] = [];
  for (let w = 0; w < hex.length; w += 8)
    for (let b = 6; b >= 0; b -= 2) bytes.push(parseInt(hex.slice(w + b, w + b + 2), 16));
  if (bytes.length === 4) return bytes.join('.');
  // An IPv4-mapped IPv6 address (a dual-stack listener) is its IPv4 address.
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff)
    return bytes.slice(12).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  return groups.join(':');
}

/** Node's address text in the same form: dotted IPv4, or eight unpadded hex groups. */
export function normalAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return mapped[1];
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return groups.map((g) => parseInt(g || '0', 16).toString(16)).join(':');
}
