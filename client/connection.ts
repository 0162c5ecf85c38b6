/**
 * How clients reach Temporal: the local dev server by default; a cluster or Temporal Cloud from the
 * environment (address, namespace, API key or mTLS), never from workflow input. No import of
 * `@temporalio/worker` here, so the HTTP API's Lambda bundle never pulls the native worker.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { Connection } from '@temporalio/client';
import { storeless } from '../core/store-mix';

export const TASK_QUEUE = process.env.STARRY_TASK_QUEUE ?? 'openstarry';

export interface TemporalEnv {
  address: string;
  namespace: string;
  apiKey?: string;
  tls?: { clientCertPair: { crt: Buffer; key: Buffer } } | true;
}

/** A PEM given as its content (an ECS secret injects the value) or as the path of a file holding it. */
function pem(value: string): Buffer {
  return value.trimStart().startsWith('-----BEGIN') ? Buffer.from(value) : readFileSync(value);
}

/**
 * Read TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY (PEM content or file
 * path).
 */
export function temporalEnv(env: NodeJS.ProcessEnv = process.env): TemporalEnv {
  const out: TemporalEnv = {
    address: env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    namespace: env.TEMPORAL_NAMESPACE ?? 'default',
  };
  if (env.TEMPORAL_API_KEY) {
    out.apiKey = env.TEMPORAL_API_KEY;
    out.tls = true;
  }
  if (env.TEMPORAL_TLS_CERT && env.TEMPORAL_TLS_KEY) {
    out.tls = { clientCertPair: { crt: pem(env.TEMPORAL_TLS_CERT), key: pem(env.TEMPORAL_TLS_KEY) } };
  }
  return out;
}

/** The options both connections take: address, TLS, API key. */
export function connectionOptions(e: TemporalEnv): { address: string; tls?: TemporalEnv['tls']; apiKey?: string } {
  return { address: e.address, ...(e.tls ? { tls: e.tls } : {}), ...(e.apiKey ? { apiKey: e.apiKey } : {}) };
}

/** A client connection, with a message that says how to start a server when none answers. */
export async function connectClient(e: TemporalEnv = temporalEnv()): Promise<Connection> {
  try {
    return await Connection.connect({ ...connectionOptions(e), connectTimeout: 5000 });
  } catch (err) {
    throw new Error(
      `cannot reach Temporal at ${e.address} (${(err as Error).message}). Start one with \`starry dev\`, or name the one to use with --address HOST:PORT (or TEMPORAL_ADDRESS).`,
    );
  }
}

/**
 * True when some worker polled the task queue recently (long polls last up to ~60 s) and, when it ran on
 * this host, its process is still alive: the server keeps listing a worker for a minute after it exits,
 * and an identity is `pid@host` by default, so a dead local worker is recognised at once.
 */
export async function hasLiveWorker(
  connection: Connection,
  env: TemporalEnv,
  taskQueue = TASK_QUEUE,
): Promise<boolean> {
  return hasLiveWorkerOn(connection, env.namespace, taskQueue);
}

/** `hasLiveWorker` by namespace: what a client that holds a connection knows. */
export async function hasLiveWorkerOn(
  connection: Pick<Connection, 'workflowService'>,
  namespace: string,
  taskQueue: string,
): Promise<boolean> {
  const res = await connection.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue, kind: 1 },
    taskQueueType: 1,
  });
  return (res.pollers ?? []).some((p) => isLivePoller(p));
}

/**
 * A poller that polled within the last 70 s (long polls last up to ~60 s) and, when it ran on this host,
 * whose process is still alive.
 */
export function isLivePoller(
  p: { lastAccessTime?: { seconds?: unknown } | null; identity?: string | null },
  now = Date.now(),
): boolean {
  const seconds = Number(p.lastAccessTime?.seconds ?? 0);
  if (now - seconds * 1000 >= 70_000) return false;
  // A worker's identity also names its store (core/store-mix.ts): `pid@host store=…`.
  const [pid, host] = storeless(p.identity ?? '').split('@');
  if (host === os.hostname() && /^\d+$/.test(pid ?? '')) return isAlive(Number(pid));
  return true;
}

/** The process `pid` exists (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
