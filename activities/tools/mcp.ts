/**
 * The MCP (Model Context Protocol) client of the tool activity: the tools of a task's `tools.mcp`
 * servers, offered to the model as `<server>.<tool>` and called through the official SDK. Servers are
 * started (stdio) or reached (Streamable HTTP) on first use and kept in a pool, because starting a server
 * per call would cost seconds and lose its state; an idle connection is closed after a while.
 *
 * The pool is this module; its parts are modules beside it: a stdio server's sandbox (mcp-stdio.ts),
 * what a server is given of the worker's environment (mcp-server-env.ts), tools and answers as the model
 * sees them (mcp-results.ts), and every failure as a ToolError of the taxonomy (mcp-errors.ts).
 */
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ErrorCode as RpcCode,
  McpError,
  ToolListChangedNotificationSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../../core/config';
import type { ToolSpec } from '../../core/llm';
import { DEFAULT_LIMITS } from '../../core/worker-policy';
import { overError } from './disk';
import { CONNECT_TIMEOUT_MS, type Connection } from './mcp-connection';
import { reportedError, requestError, settled, startError } from './mcp-errors';
import { resultData, toolSpec } from './mcp-results';
import { serverHeaders } from './mcp-server-env';
import { stdioTransport, type McpSandbox, type McpSandboxOptions } from './mcp-stdio';

export { fillTemplate } from './mcp-server-env';
export type { McpSandboxOptions } from './mcp-stdio';

const CLIENT_INFO = { name: 'openstarry', version: '0.1.0' };
const DEFAULT_IDLE_MS = 5 * 60_000;
const DEFAULT_LIST_TTL_MS = 60_000;
const LIST_TIMEOUT_MS = 30_000;
/** A server that pages its tool list forever must not hang the task. */
const MAX_LIST_PAGES = 20;
const STDERR_TAIL_CHARS = 2048;
/** How long close() waits for an HTTP server to end its session before giving up on it. */
const TERMINATE_SESSION_MS = 1000;

export interface McpPoolOptions {
  /** Close a server's connection after this long without use (default 5 min). */
  idleMs?: number;
  /**
   * How long a server's tool list is reused before it is listed again (default 60 s; a tools/list_changed notification
   * drops it at once).
   */
  listTtlMs?: number;
  /**
   * The worker's environment, where `${env:NAME}` templates in headers and env values are looked up (default
   * process.env).
   */
  env?: NodeJS.ProcessEnv;
}

/**
 * The worker's MCP connections, pooled per (server name, config, cwd). A connection that closed or
 * failed is dropped and the next use opens a new one; concurrent first uses share one connect.
 *
 * ```ts
 * const pool = new McpPool();
 * const specs = await pool.listTools('files', { command: 'node', args: ['server.js'] }, { cwd: '/work' });
 * await pool.callTool('files', config, 'echo', { text: 'hi' }, { cwd: '/work', signal, timeoutMs: 30_000 }); // 'hi'
 * await pool.close();
 * ```
 */
export class McpPool {
  private readonly conns = new Map<string, Connection>();
  private readonly idleMs: number;
  private readonly listTtlMs: number;
  private readonly env: NodeJS.ProcessEnv;
  /** A dead connection's end, for the errors that drop it (mcp-errors.ts). */
  private readonly drop = (conn: Connection): Promise<void> => this.shutdown(conn);

  constructor(opts: McpPoolOptions = {}) {
    this.idleMs = opts.idleMs ?? DEFAULT_IDLE_MS;
    this.listTtlMs = opts.listTtlMs ?? DEFAULT_LIST_TTL_MS;
    this.env = opts.env ?? process.env;
  }

  /**
   * The server's tools as `<server>.<tool>` specs (description, inputSchema as parameters). Cached
   * (listTtlMs). cwd = where a stdio server starts (the task's first workspace root); sandbox = what its
   * sandbox grants.
   */
  async listTools(
    server: string,
    config: McpServerConfig,
    opts: { cwd: string; signal?: AbortSignal; sandbox?: McpSandboxOptions },
  ): Promise<ToolSpec[]> {
    return this.use(server, config, opts, async (conn) => {
      if (conn.tools && conn.tools.until > Date.now()) return conn.tools.specs;
      // Shared by concurrent callers, so it runs without any one caller's signal; each waits on its own.
      conn.listing ??= this.list(conn).finally(() => {
        conn.listing = undefined;
      });
      return await raceAbort(conn.listing, opts.signal);
    });
  }

  /**
   * Call `<tool>` (the name WITHOUT the server prefix) and return what the agent sees as the tool's result
   * data. A stdio server that grew the workspace over its cap (`limits.workspaceBytes`), or its tenant's workspaces
   * over theirs (`limits.tenantBytes`), makes it E_LIMIT.
   */
  async callTool(
    server: string,
    config: McpServerConfig,
    tool: string,
    args: Record<string, unknown>,
    opts: { cwd: string; signal: AbortSignal; timeoutMs: number; sandbox?: McpSandboxOptions },
  ): Promise<unknown> {
    return this.use(server, config, opts, async (conn) => {
      let result: Awaited<ReturnType<Client['callTool']>>;
      try {
        // With `signal`, the SDK sends notifications/cancelled to the server when it aborts.
        result = await conn.client.callTool({ name: tool, arguments: args }, undefined, {
          signal: opts.signal,
          timeout: opts.timeoutMs,
        });
      } catch (err) {
        // The SDK wraps the abort reason in an McpError; the activity needs the reason itself.
        if (opts.signal.aborted) throw opts.signal.reason;
        throw await requestError(conn, tool, err, opts.timeoutMs, this.drop);
      }
      if (conn.stdio) await this.checkDisk(conn, tool);
      if (!('content' in result)) return result.toolResult; // a pre-2024-11-05 server
      if (result.isError === true) throw reportedError(conn, tool, result.content);
      return resultData(result.content, result.structuredContent);
    });
  }

  /** Close every connection (worker shutdown, tests). */
  async close(): Promise<void> {
    const conns = [...this.conns.values()];
    this.conns.clear();
    await Promise.all(conns.map((conn) => this.shutdown(conn)));
  }

  /** Run `fn` on the pooled connection (opened if needed), keeping it from going idle meanwhile. */
  private async use<T>(
    server: string,
    config: McpServerConfig,
    opts: { cwd: string; signal?: AbortSignal; sandbox?: McpSandboxOptions },
    fn: (conn: Connection) => Promise<T>,
  ): Promise<T> {
    const { signal } = opts;
    if (signal?.aborted) throw signal.reason;
    const sandbox: McpSandbox = {
      roots: [opts.cwd],
      network: false,
      readOnly: [],
      limits: DEFAULT_LIMITS,
      ...opts.sandbox,
    };
    const conn = this.connection(server, config, opts.cwd, sandbox);
    conn.inFlight++;
    clearTimeout(conn.idleTimer);
    try {
      await raceAbort(conn.ready, signal);
      return await fn(conn);
    } finally {
      conn.inFlight--;
      if (conn.inFlight === 0 && !conn.closed) {
        // unref'd: an idle connection must not keep the worker (or jest) alive.
        conn.idleTimer = setTimeout(() => void this.shutdown(conn), this.idleMs).unref();
      }
    }
  }

  /** The pooled connection for this server, config, cwd and sandbox, or a new one (its connect under way). */
  private connection(server: string, config: McpServerConfig, cwd: string, sandbox: McpSandbox): Connection {
    const key = `${server}\u0000${JSON.stringify(config)}\u0000${cwd}\u0000${JSON.stringify(sandbox)}`;
    const pooled = this.conns.get(key);
    if (pooled && !pooled.closed) return pooled;
    // Templates first: a missing variable is the config's fault and must not reach anything.
    const http = 'url' in config ? this.httpTransport(server, config) : undefined;
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const conn: Connection = {
      key,
      server,
      config,
      cwd,
      sandbox,
      client,
      ...(http ? { http } : {}),
      stderr: '',
      ready: Promise.resolve(),
      closed: false,
      inFlight: 0,
      listGeneration: 0,
    };
    client.onclose = () => {
      conn.closed = true;
      this.forget(conn);
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      conn.tools = undefined;
      conn.listGeneration++;
    });
    conn.ready = this.connect(conn);
    // Awaited by every user; this only keeps a connect nobody waits for any more from being unhandled.
    conn.ready.catch(() => undefined);
    this.conns.set(key, conn);
    return conn;
  }

  /** E_LIMIT when a call grew the workspace, or its tenant's space, over its cap. */
  private async checkDisk(conn: Connection, tool: string): Promise<void> {
    const source = `${conn.server}.${tool}`;
    const over = await conn.disk?.check(true);
    if (over) throw overError({ ...conn.disk!.scope, source }, over, `after ${source},`);
  }

  private httpTransport(
    server: string,
    config: Extract<McpServerConfig, { url: string }>,
  ): StreamableHTTPClientTransport {
    const headers = serverHeaders(server, config, this.env);
    return new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers } });
  }

  private async connect(conn: Connection): Promise<void> {
    try {
      const transport =
        conn.http ??
        (conn.stdio = await stdioTransport(
          conn,
          conn.config as Extract<McpServerConfig, { command: string }>,
          this.env,
        ));
      if (conn.closed) throw new Error('the pool closed the connection while the server was starting');
      const stderr = conn.stdio?.stderr as Readable | null | undefined;
      if (stderr) {
        stderr.setEncoding('utf8');
        // Always read it: an unread pipe fills up and blocks the server's next write to stderr.
        stderr.on('data', (chunk: string) => {
          conn.stderr = (conn.stderr + chunk).slice(-STDERR_TAIL_CHARS);
        });
      }
      await conn.client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    } catch (err) {
      // The SDK already closes the client (and kills the process) when initialize fails.
      conn.closed = true;
      this.forget(conn);
      await settled();
      // A server that never started has no exit to remove its sandbox at.
      if (!conn.stdio?.started) await conn.release?.();
      throw await startError(conn, err);
    }
  }

  /** List every page of the server's tools and cache the specs (unless the list changed meanwhile). */
  private async list(conn: Connection): Promise<ToolSpec[]> {
    const generation = conn.listGeneration;
    const tools: Tool[] = [];
    try {
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const result = await conn.client.listTools(cursor !== undefined ? { cursor } : undefined, {
          timeout: LIST_TIMEOUT_MS,
        });
        tools.push(...result.tools);
        cursor = result.nextCursor;
        if (cursor === undefined) break;
      }
    } catch (err) {
      // A server without the tools capability answers "method not found": it has no tools to offer.
      if (!(err instanceof McpError && err.code === RpcCode.MethodNotFound))
        throw await requestError(conn, 'tools/list', err, LIST_TIMEOUT_MS, this.drop);
    }
    const specs: ToolSpec[] = [];
    const schemas = new Map<string, Record<string, unknown>>();
    for (const tool of tools) {
      const spec = toolSpec(conn.server, tool);
      if (!spec) continue;
      specs.push(spec);
      schemas.set(tool.name, spec.parameters);
    }
    if (conn.listGeneration === generation) conn.tools = { specs, schemas, until: Date.now() + this.listTtlMs };
    return specs;
  }

  /** Drop the connection from the pool (it stays usable by whoever holds it). */
  private forget(conn: Connection): void {
    clearTimeout(conn.idleTimer);
    if (this.conns.get(conn.key) === conn) this.conns.delete(conn.key);
  }

  /** Close a connection: end the HTTP session, or end a stdio server (stdin closed, then SIGTERM, then SIGKILL). */
  private async shutdown(conn: Connection): Promise<void> {
    this.forget(conn);
    if (conn.closed) return;
    conn.closed = true;
    if (conn.http?.sessionId !== undefined) await within(conn.http.terminateSession(), TERMINATE_SESSION_MS);
    await conn.client.close().catch(() => undefined);
  }
}

/** `p`, or `reason` of the signal as soon as it aborts (`p` goes on, for whoever else waits on it). */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason as unknown);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as unknown);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Wait for `p` at most `ms`, ignoring its failure (best-effort cleanup). */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, ms).unref()))]);
  clearTimeout(timer);
}
