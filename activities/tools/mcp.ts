/**
 * The MCP (Model Context Protocol) client of the tool activity: the tools of a task's `tools.mcp`
 * servers, offered to the model as `<server>.<tool>` and called through the official SDK. Servers are
 * started (stdio) or reached (Streamable HTTP) on first use and kept in a pool, because starting a server
 * per call would cost seconds and lose its state; an idle connection is closed after a while.
 *
 * Every failure becomes a ToolError of the taxonomy (core/errors/), so the activity decides the
 * same way as for built-in tools: a server that cannot start is fatal (a config problem), a server that
 * died or is unreachable is transient (Temporal retries, and the retry gets a fresh connection), a server
 * stopped by a resource limit is E_LIMIT, and a tool that answered with an error is pain the model hears about.
 *
 * A stdio server runs in the sandbox `shell.run` programs run in (confine.ts): read-only system, the
 * task's workspace, the read-only directories and the network its policy entry grants, never as root,
 * with an environment of its own (PATH, HOME, LANG and the config's `env`) and the worker's resource limits.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, type StdioServerParameters } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ErrorCode as RpcCode,
  McpError,
  ToolListChangedNotificationSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../../core/config';
import type { ToolSpec } from '../../core/llm';
import { kindOf } from '../../core/errors';
import { httpStatusCode, networkCodeOf } from '../../core/errors/http';
import { isValidToolName } from '../../core/tools';
import {
  DEFAULT_LIMITS,
  ENV_TEMPLATE,
  changesCodeLoading,
  type LimitName,
  type SandboxLimits,
} from '../../core/worker-policy';
import { SANDBOX_PATH, confinedSpawn, onSandboxPath, reapOrphanedSandboxes } from './confine';
import { WorkspaceDisk, overError, type TenantSpace } from './disk';
import { limitError, limitOfExit } from './limits';
import { ToolError, messageOf, nodeCode } from '../../core/errors/activity';

const CLIENT_INFO = { name: 'openstarry', version: '0.1.0' };
const DEFAULT_IDLE_MS = 5 * 60_000;
const DEFAULT_LIST_TTL_MS = 60_000;
/** Starting a server may download it first (`npx -y ...`): generous, and separate from a call's timeout. */
const CONNECT_TIMEOUT_MS = 30_000;
const LIST_TIMEOUT_MS = 30_000;
/** A server that pages its tool list forever must not hang the task. */
const MAX_LIST_PAGES = 20;
const STDERR_TAIL_CHARS = 2048;
const MAX_DESCRIPTION_CHARS = 1024;
const MAX_SUGGESTION_CHARS = 1000;
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
 * What a stdio server's sandbox grants besides the system's programs, read from the worker's policy by
 * the activity (`mcpCommands`, `limits`).
 */
export interface McpSandboxOptions {
  /** Real paths of the task's workspace roots, all writable (default: cwd alone). */
  roots?: string[];
  /** Keep the host's network (default: none, loopback only). */
  network?: boolean;
  /** Directories it sees read-only: its code, its node_modules. */
  readOnly?: string[];
  limits?: SandboxLimits;
  /** The tenant's space, whose workspaces `limits.tenantBytes` bounds together. */
  space?: TenantSpace;
}

type McpSandbox = Required<Omit<McpSandboxOptions, 'space'>> & Pick<McpSandboxOptions, 'space'>;

/** What ended a stdio server's process. */
interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * The SDK's stdio transport, which also remembers how its process ended: the SDK reports only that the
 * connection closed, and "exit code 2" is what tells a crash from a clean stop. The child is a private
 * field of the SDK's class; without it (another SDK version) the messages just lack the exit code (and
 * the sandbox's cgroup is left to the reaper).
 */
class ObservedStdioTransport extends StdioClientTransport {
  exit: Exit | undefined;
  /** Its process was spawned (so its exit will be seen). */
  started = false;

  constructor(
    params: StdioServerParameters,
    private readonly onExit: (exit: Exit) => void,
  ) {
    super(params);
  }

  override async start(): Promise<void> {
    await super.start();
    this.started = true;
    // `start` resolves on the child's 'spawn' event, so its 'exit' cannot have been missed.
    const child = (this as unknown as { _process?: ChildProcess })._process;
    child?.once('exit', (code, signal) => {
      this.exit = { code, signal };
      this.onExit(this.exit);
    });
  }
}

/** One pooled connection: a started (or starting) server and what we know about it. */
interface Connection {
  readonly key: string;
  readonly server: string;
  readonly config: McpServerConfig;
  /** Where a stdio server runs. */
  readonly cwd: string;
  readonly sandbox: McpSandbox;
  readonly client: Client;
  /** Set once the server's sandbox is ready (stdio), or at once (HTTP). */
  stdio?: ObservedStdioTransport;
  http?: StreamableHTTPClientTransport;
  /** Settles once a stdio server's process ended: the limit its sandbox saw hit, if any. */
  ended?: Promise<LimitName | undefined>;
  /** Remove the server's sandbox (its cgroup), once: when its process ended, or when it never started. */
  release?: () => Promise<LimitName | undefined>;
  /** The disk of a stdio server's workspace, measured at its start and after each call. */
  disk?: WorkspaceDisk;
  /** The last characters of the server's stderr (stdio), quoted by error messages. */
  stderr: string;
  /** Settles when the initialize handshake is done; rejects with the ToolError for the failure. */
  ready: Promise<void>;
  closed: boolean;
  /** Uses in progress: the idle timer runs only while there are none. */
  inFlight: number;
  idleTimer?: NodeJS.Timeout;
  tools?: { specs: ToolSpec[]; schemas: Map<string, Record<string, unknown>>; until: number };
  listing?: Promise<ToolSpec[]>;
  /** Bumped by tools/list_changed, so a listing that was under way then is not cached. */
  listGeneration: number;
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
        throw await this.requestError(conn, tool, err, opts.timeoutMs);
      }
      if (conn.stdio) await this.checkDisk(conn, tool);
      if (!('content' in result)) return result.toolResult; // a pre-2024-11-05 server
      if (result.isError === true) throw this.reportedError(conn, tool, result.content);
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

  /**
   * A stdio server's transport: its sandbox made, the SDK told to start the sandbox. Its environment is
   * the sandbox's own plus the config's `env` (the worker's, never: what the SDK adds from it is unset
   * before the sandbox starts), and no variable that changes how it loads code.
   */
  private async stdioTransport(
    conn: Connection,
    config: Extract<McpServerConfig, { command: string }>,
  ): Promise<ObservedStdioTransport> {
    const { server, sandbox } = conn;
    const source = `mcp ${server}`;
    const fail = (message: string, suggestion?: string) =>
      ToolError.of({
        code: 'E_UNAVAILABLE',
        kind: 'fatal',
        source,
        message: `MCP server '${server}' failed to start: ${message}`,
        suggestion,
      });
    const env: Record<string, string> = {
      PATH: SANDBOX_PATH.join(':'),
      HOME: sandbox.roots[0] ?? conn.cwd,
      LANG: 'C.UTF-8',
    };
    for (const [name, template] of Object.entries(config.env ?? {})) {
      if (changesCodeLoading(name)) {
        throw ToolError.of({
          code: 'E_INTERNAL',
          kind: 'fatal',
          source,
          message: `Refused by the worker's policy: tools.mcp.${server}.env sets ${name}, which changes how the server loads code; no config may set it`,
          suggestion: `Remove ${name} from tools.mcp.${server}.env.`,
        });
      }
      env[name] = fillTemplate(template, this.env, `tools.mcp.${server}.env.${name}`);
    }
    if (!(await onSandboxPath(config.command, conn.cwd))) {
      throw fail(
        `ENOENT: '${config.command}' is not a program in the sandbox (looked in ${SANDBOX_PATH.join(', ')}), or the directory ${conn.cwd} does not exist`,
        `Check the command of tools.mcp.${server}.`,
      );
    }
    const missing = sandbox.readOnly.filter((dir) => !existsSync(dir));
    if (missing.length) {
      throw fail(
        `ENOENT: ${missing.join(', ')}, which the worker's policy shows it read-only (mcpCommands readOnly), does not exist on the worker`,
        'Ask the worker operator to fix mcpCommands in STARRY_WORKER_POLICY.',
      );
    }
    // A hard link in the workspace would be an outside file the server could read and write.
    conn.disk = await WorkspaceDisk.open({
      roots: sandbox.roots,
      limits: sandbox.limits,
      source,
      space: sandbox.space,
    });
    await reapOrphanedSandboxes();
    const box = await confinedSpawn({
      command: config.command,
      argv: config.args,
      roots: sandbox.roots,
      cwd: conn.cwd,
      env,
      // Never root: a server is code the operator did not write.
      dropRoot: process.getuid?.() === 0,
      source,
      who: `MCP server '${server}'`,
      otherwise: `serve it over HTTP (tools.mcp.${server}.url), or drop it from the worker policy's mcpCommands`,
      limits: sandbox.limits,
      network: sandbox.network,
      readOnly: sandbox.readOnly,
    });
    let released: Promise<LimitName | undefined> | undefined;
    const release = (conn.release = () => (released ??= box.release().catch(() => undefined)));
    let ended: (hit: Promise<LimitName | undefined>) => void = () => undefined;
    conn.ended = new Promise((resolve) => (ended = resolve));
    return new ObservedStdioTransport(
      { command: box.file, args: box.args, env: box.env, cwd: '/', stderr: 'pipe' },
      (exit) => {
        ended(release().then((hit) => hit ?? limitOfExit(exit.code, exit.signal)));
      },
    );
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
    const headers: Record<string, string> = {};
    for (const [name, template] of Object.entries(config.headers ?? {})) {
      headers[name] = fillTemplate(template, this.env, `tools.mcp.${server}.headers.${name}`);
    }
    return new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers } });
  }

  private async connect(conn: Connection): Promise<void> {
    try {
      const transport =
        conn.http ??
        (conn.stdio = await this.stdioTransport(conn, conn.config as Extract<McpServerConfig, { command: string }>));
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
      throw await this.startError(conn, err);
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
        throw await this.requestError(conn, 'tools/list', err, LIST_TIMEOUT_MS);
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

  /** A failure to start or reach the server: the config's fault (fatal) unless it may clear up. */
  private async startError(conn: Connection, err: unknown): Promise<ToolError> {
    if (ToolError.is(err)) return err;
    const { server } = conn;
    const source = `mcp ${server}`;
    if ('command' in conn.config) {
      const { command } = conn.config;
      const suggestion = `Check the command and args in tools.mcp.${server} (the server ran as: ${[command, ...conn.config.args].join(' ')}).`;
      const hit = conn.stdio?.exit ? await conn.ended : undefined;
      if (hit !== undefined) {
        // The operator's limits leave the server no room to start: no call of the model changes that.
        return limitError(
          hit,
          conn.sandbox.limits,
          source,
          `MCP server '${server}' failed to start: it hit`,
          `; it ${exitText(conn.stdio!.exit!)}${this.stderrPart(conn)}`,
          {
            kind: 'fatal',
            suggestion: 'Ask the worker operator for larger limits in STARRY_WORKER_POLICY, or use a lighter server.',
          },
        );
      }
      if (isTimeout(err)) {
        // A first start may be slow (a package download): worth another attempt.
        return ToolError.of(
          {
            code: 'ETIMEDOUT',
            source,
            suggestion,
            message: `MCP server '${server}' started but did not answer the initialize request within ${CONNECT_TIMEOUT_MS} ms${this.stderrPart(conn)}`,
          },
          { cause: err },
        );
      }
      const spawnCode = nodeCode(err);
      const reason =
        spawnCode !== undefined
          ? `${messageOf(err)}${spawnCode === 'ENOENT' ? ` ('${command}' was not found on the worker's PATH, or the directory ${conn.cwd} does not exist)` : ''}`
          : conn.stdio?.exit
            ? `it ${exitText(conn.stdio.exit)} before the initialize handshake`
            : stripRpcPrefix(messageOf(err));
      return ToolError.of(
        {
          code: 'E_UNAVAILABLE',
          kind: 'fatal',
          source,
          suggestion,
          message: `MCP server '${server}' failed to start: ${reason}${this.stderrPart(conn)}`,
        },
        { cause: err },
      );
    }
    const where = `MCP server '${server}' could not be reached at ${conn.config.url}`;
    if (isTimeout(err)) {
      return ToolError.of(
        {
          code: 'ETIMEDOUT',
          source,
          message: `${where}: no answer to the initialize request within ${CONNECT_TIMEOUT_MS} ms`,
        },
        { cause: err },
      );
    }
    if (err instanceof StreamableHTTPError) return httpStatusError(server, source, where, err, true);
    const network = networkCodeOf(err);
    if (network !== undefined) {
      // A host that does not resolve is a config mistake; a refused or reset connection may clear up.
      const kind = network === 'ENOENT' ? 'fatal' : 'transient';
      return ToolError.of(
        { code: 'E_UNAVAILABLE', kind, source, message: `${where}: ${detailOf(err)}` },
        { cause: err },
      );
    }
    return ToolError.of(
      {
        code: 'E_UNAVAILABLE',
        kind: 'fatal',
        source,
        message: `${where}: ${stripRpcPrefix(messageOf(err))}`,
        suggestion: `Check the url of tools.mcp.${server}: it must be a Streamable HTTP MCP endpoint.`,
      },
      { cause: err },
    );
  }

  /**
   * A failed request (`what`: the tool's name, or `tools/list`). A dead connection is dropped so the
   * retry starts a fresh server; JSON-RPC errors keep the connection.
   */
  private async requestError(conn: Connection, what: string, err: unknown, timeoutMs: number): Promise<ToolError> {
    if (ToolError.is(err)) return err;
    const { server } = conn;
    const listing = what === 'tools/list';
    const source = listing ? `mcp ${server}` : `${server}.${what}`;
    const name = `${server}.${what}`;
    if (err instanceof McpError) {
      const text = stripRpcPrefix(err.message);
      switch (err.code) {
        case RpcCode.ConnectionClosed:
          return this.closedError(conn, what, source, err);
        case RpcCode.RequestTimeout:
          return ToolError.of(
            {
              code: 'ETIMEDOUT',
              source,
              message: `MCP server '${server}' did not answer ${what} within ${timeoutMs} ms`,
            },
            { cause: err },
          );
      }
      if (listing) {
        return ToolError.of(
          { code: 'E_UNAVAILABLE', source, message: `MCP server '${server}' failed to list its tools: ${text}` },
          { cause: err },
        );
      }
      // The SDK checks structured output against the tool's outputSchema and reports a mismatch as
      // InvalidParams/InvalidRequest: the server's fault, not the arguments'.
      if (/structured content/i.test(text)) {
        return ToolError.of(
          {
            code: 'E_TOOL_FAILED',
            kind: 'execution',
            source,
            message: `${name} answered with a result that does not match its output schema: ${text}`,
          },
          { cause: err },
        );
      }
      if (err.code === RpcCode.MethodNotFound || (err.code === RpcCode.InvalidParams && isUnknownTool(text))) {
        return this.unknownToolError(conn, what, source, text, err);
      }
      if (err.code === RpcCode.InvalidParams) return this.schemaError(conn, what, source, text, err);
      return ToolError.of(
        {
          code: 'E_TOOL_FAILED',
          kind: 'execution',
          source,
          message: `MCP server '${server}' failed in ${what}: ${text}`,
        },
        { cause: err },
      );
    }
    if (err instanceof StreamableHTTPError) {
      // 404 on an open session: the server forgot it (restarted); a new connection makes a new one.
      if (err.code === 404) {
        await this.shutdown(conn);
        return ToolError.of(
          {
            code: 'E_UNAVAILABLE',
            kind: 'transient',
            source,
            message: `MCP server '${server}' no longer knows our session (HTTP 404 during ${what}); a retry opens a new one`,
          },
          { cause: err },
        );
      }
      return httpStatusError(server, source, `MCP server '${server}' failed during ${what}`, err, false);
    }
    // The transport cannot send any more (the process is gone) or the HTTP server went away.
    if (networkCodeOf(err) !== undefined || messageOf(err) === 'Not connected' || conn.closed) {
      return this.closedError(conn, what, source, err);
    }
    // Anything else comes from the server's answer (a result that is not a valid result).
    return ToolError.of(
      {
        code: 'E_TOOL_FAILED',
        kind: 'execution',
        source,
        message: `MCP server '${server}' answered ${what} with an invalid result: ${messageOf(err)}`,
      },
      { cause: err },
    );
  }

  /** The server went away during a request: transient, and the connection is dropped for the retry. */
  private async closedError(conn: Connection, what: string, source: string, err: unknown): Promise<ToolError> {
    await this.shutdown(conn);
    await settled();
    const facts: string[] = [];
    if (conn.stdio?.exit) facts.push(exitText(conn.stdio.exit, true));
    const tail = conn.stderr.trim();
    if (tail) facts.push(`stderr: ${tail}`);
    if (conn.http) facts.push(detailOf(err));
    const hit = conn.stdio?.exit ? await conn.ended : undefined;
    // Stopped by a limit: the call asked too much of it (the next one starts a fresh server).
    if (hit !== undefined)
      return limitError(
        hit,
        conn.sandbox.limits,
        source,
        `MCP server '${conn.server}' was stopped during ${what}: it hit`,
        ` (${facts.join('; ')})`,
      );
    const message = `MCP server '${conn.server}' closed the connection during ${what}${facts.length ? ` (${facts.join('; ')})` : ''}`;
    return ToolError.of({ code: 'E_UNAVAILABLE', kind: 'transient', source, message }, { cause: err });
  }

  /**
   * A result with `isError: true`: E_TOOL_FAILED. The TypeScript SDK's servers turn their own JSON-RPC
   * errors into such results (`MCP error -32602: Input validation error: ...`), so those codes count too:
   * the model must hear "wrong arguments" as such, whichever way the server reported it.
   */
  private reportedError(conn: Connection, tool: string, content: unknown): ToolError {
    const text = contentText(content);
    const rpc = /^MCP error (-?\d+): /.exec(text);
    const code = rpc ? Number(rpc[1]) : undefined;
    const inner = stripRpcPrefix(text);
    const source = `${conn.server}.${tool}`;
    if (code === RpcCode.MethodNotFound || (code === RpcCode.InvalidParams && isUnknownTool(inner))) {
      return this.unknownToolError(conn, tool, source, inner);
    }
    if (code === RpcCode.InvalidParams && !/structured content/i.test(inner))
      return this.schemaError(conn, tool, source, inner);
    return ToolError.of({
      code: 'E_TOOL_FAILED',
      kind: 'execution',
      source,
      message: `${source} reported an error: ${text || '(no message)'}`,
    });
  }

  private schemaError(conn: Connection, tool: string, source: string, text: string, cause?: unknown): ToolError {
    const schema = conn.tools?.schemas.get(tool);
    const suggestion = schema ? cut(`${source} takes ${JSON.stringify(schema)}`, MAX_SUGGESTION_CHARS) : undefined;
    return ToolError.of(
      { code: 'E_SCHEMA', kind: 'execution', source, message: `${source} rejected its arguments: ${text}`, suggestion },
      { cause },
    );
  }

  private unknownToolError(conn: Connection, tool: string, source: string, text: string, cause?: unknown): ToolError {
    const known = conn.tools?.specs.map((s) => s.name);
    const suggestion = known
      ? cut(`MCP server '${conn.server}' offers: ${known.join(', ') || 'no tools'}.`, MAX_SUGGESTION_CHARS)
      : undefined;
    return ToolError.of(
      {
        code: 'E_UNKNOWN_TOOL',
        kind: 'execution',
        source,
        message: `MCP server '${conn.server}' has no tool '${tool}': ${text}`,
        suggestion,
      },
      { cause },
    );
  }

  private stderrPart(conn: Connection): string {
    const tail = conn.stderr.trim();
    return tail ? `; its stderr: ${tail}` : '';
  }
}

/**
 * Fill `${env:NAME}` from env; a missing variable is a ToolError E_AUTH kind 'fatal' naming the variable
 * and the server (never the value). `where` says what the template is, e.g. `tools.mcp.github.headers.Authorization`;
 * the server of such a path becomes the error's source.
 *
 * ```ts
 * fillTemplate('Bearer ${env:GH_TOKEN}', { GH_TOKEN: 'abc' }, 'tools.mcp.github.headers.Authorization') // 'Bearer abc'
 * ```
 */
export function fillTemplate(template: string, env: NodeJS.ProcessEnv, where: string): string {
  return template.replace(ENV_TEMPLATE, (_match, name: string) => {
    const value = env[name];
    if (value !== undefined) return value;
    const server = /^tools\.mcp\.([^.]+)/.exec(where)?.[1];
    throw ToolError.of({
      code: 'E_AUTH',
      kind: 'fatal',
      source: server !== undefined ? `mcp ${server}` : 'mcp',
      message: `${where} uses \${env:${name}}, but ${name} is not set in the worker's environment${server !== undefined ? ` (MCP server '${server}')` : ''}`,
      suggestion: `Set ${name} in the environment of the worker that runs this task.`,
    });
  });
}

/** A tool as offered to the model, or undefined when its name cannot be a tool name of ours. */
function toolSpec(server: string, tool: Tool): ToolSpec | undefined {
  const name = `${server}.${tool.name}`;
  if (!isValidToolName(name)) return undefined;
  const { $schema: _dialect, ...parameters } = tool.inputSchema as Record<string, unknown>;
  const description =
    tool.description || tool.title || tool.annotations?.title || `MCP tool ${tool.name} of server ${server}`;
  return { name, description: description.slice(0, MAX_DESCRIPTION_CHARS), parameters };
}

/** One content block, as the model sees it: text as is, anything else as a short placeholder. */
function contentItem(item: unknown): { text: string; isText: boolean } {
  const block = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  switch (block.type) {
    case 'text':
      return { text: str(block.text) ?? '', isText: true };
    case 'image':
    case 'audio':
      return {
        text: `[${block.type} ${str(block.mimeType) ?? 'unknown type'}, ${Buffer.byteLength(str(block.data) ?? '', 'base64')} bytes]`,
        isText: false,
      };
    case 'resource_link':
      return {
        text: `[resource link ${str(block.uri) ?? ''}${block.mimeType ? ` ${str(block.mimeType)}` : ''}]`,
        isText: false,
      };
    case 'resource': {
      const res = (typeof block.resource === 'object' && block.resource !== null ? block.resource : {}) as Record<
        string,
        unknown
      >;
      const head = `resource ${str(res.uri) ?? ''}${res.mimeType ? ` ${str(res.mimeType)}` : ''}`;
      // Embedded text is data the model asked for; a blob is bytes it cannot read.
      if (typeof res.text === 'string') return { text: `[${head}]\n${res.text}`, isText: false };
      return { text: `[${head}, ${Buffer.byteLength(str(res.blob) ?? '', 'base64')} bytes]`, isText: false };
    }
    default:
      return { text: `[${String(block.type ?? 'unknown')} content]`, isText: false };
  }
}

/**
 * A tool's result for the model: all-text content becomes one string; structured content without text is
 * returned as is; otherwise `{ content, structuredContent? }` with every block as text (placeholders for
 * images and other binary blocks, so no base64 ever reaches the model or the history).
 */
function resultData(content: unknown, structuredContent: unknown): unknown {
  const items = (Array.isArray(content) ? content : []).map(contentItem);
  const hasText = items.some((i) => i.isText);
  if (structuredContent !== undefined && !hasText) return structuredContent;
  if (items.every((i) => i.isText)) return items.map((i) => i.text).join('\n');
  return { content: items.map((i) => i.text), ...(structuredContent !== undefined ? { structuredContent } : {}) };
}

function contentText(content: unknown): string {
  return (Array.isArray(content) ? content : [])
    .map(contentItem)
    .map((i) => i.text)
    .join('\n')
    .trim();
}

/** `MCP error -32602: MCP error -32602: bad` (the SDK prefixes the code at each hop) → `bad`. */
function stripRpcPrefix(message: string): string {
  let text = message;
  for (let m = /^MCP error -?\d+: /.exec(text); m; m = /^MCP error -?\d+: /.exec(text)) text = text.slice(m[0].length);
  return text;
}

function isUnknownTool(text: string): boolean {
  return /^(Tool \S+ (not found|disabled)|Unknown tool)/i.test(text);
}

function isTimeout(err: unknown): boolean {
  return err instanceof McpError && err.code === RpcCode.RequestTimeout;
}

function exitText(exit: Exit, short = false): string {
  if (exit.signal !== null) return short ? `killed by ${exit.signal}` : `was killed by ${exit.signal}`;
  return short ? `exit code ${exit.code}` : `exited with code ${exit.code}`;
}

/** `fetch failed: connect ECONNREFUSED 127.0.0.1:9` rather than undici's bare `fetch failed`. */
function detailOf(err: unknown): string {
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  return cause !== undefined ? `${messageOf(err)}: ${messageOf(cause)}` : messageOf(err);
}

/**
 * An HTTP status from the server, by the house's table as the worker's own request: 401/403 are the
 * configuration's credentials (E_AUTH, fatal), 408/409/429/5xx may clear up (transient). Any other
 * status is the MCP transport's, not something the model asked for: at connect the URL is not an MCP
 * endpoint (fatal), later the session broke (transient, retried on a fresh connection).
 */
function httpStatusError(
  server: string,
  source: string,
  where: string,
  err: StreamableHTTPError,
  connecting: boolean,
): ToolError {
  const status = err.code ?? -1;
  const detail = err.message.replace(/^Streamable HTTP error: /, '');
  const message = `${where}: ${status > 0 ? `HTTP ${status}: ` : ''}${detail}`;
  const code = status > 0 ? httpStatusCode(status, 'worker') : undefined;
  if (code === 'E_AUTH') {
    return ToolError.of(
      {
        code,
        source,
        message,
        suggestion: `Check the headers of tools.mcp.${server} and the worker's environment variables they use.`,
      },
      { cause: err },
    );
  }
  if (code !== undefined && kindOf(code) === 'transient')
    return ToolError.of({ code, source, message }, { cause: err });
  return ToolError.of(
    {
      code: 'E_UNAVAILABLE',
      kind: connecting ? 'fatal' : 'transient',
      source,
      message,
      suggestion: connecting
        ? `Check the url of tools.mcp.${server}: it must be a Streamable HTTP MCP endpoint.`
        : undefined,
    },
    { cause: err },
  );
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

/** One turn of the event loop: the last stderr chunk and the 'exit' event of a dead server land first. */
function settled(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
