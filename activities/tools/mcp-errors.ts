/**
 * MCP failures as ToolErrors of the taxonomy (core/errors/), so the activity decides the same way as for
 * built-in tools: a server that cannot start is fatal (a config problem), a server that died or is
 * unreachable is transient (Temporal retries, and the retry gets a fresh connection), a server stopped
 * by a resource limit is E_LIMIT, and a tool that answered with an error is pain the model hears about.
 */
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode as RpcCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../../core/config';
import { kindOf } from '../../core/errors';
import { httpStatusCode, networkCodeOf } from '../../core/errors/http';
import { ToolError, messageOf, nodeCode } from '../../core/errors/activity';
import { limitError } from './limits';
import { CONNECT_TIMEOUT_MS, type Connection } from './mcp-connection';
import { contentText } from './mcp-results';
import { exitText } from './mcp-stdio';

const MAX_SUGGESTION_CHARS = 1000;

/** Close a connection and drop it from the pool (McpPool's shutdown), so the retry gets a fresh server. */
export type Drop = (conn: Connection) => Promise<void>;

/** A failure to start or reach the server: the config's fault (fatal) unless it may clear up. */
export async function startError(conn: Connection, err: unknown): Promise<ToolError> {
  if (ToolError.is(err)) return err;
  return 'command' in conn.config
    ? stdioStartError(conn, conn.config, err)
    : httpStartError(conn.server, conn.config, err);
}

async function stdioStartError(
  conn: Connection,
  config: Extract<McpServerConfig, { command: string }>,
  err: unknown,
): Promise<ToolError> {
  const { server } = conn;
  const source = `mcp ${server}`;
  const { command } = config;
  const suggestion = `Check the command and args in tools.mcp.${server} (the server ran as: ${[command, ...config.args].join(' ')}).`;
  const hit = conn.stdio?.exit ? await conn.ended : undefined;
  if (hit !== undefined) {
    // The operator's limits leave the server no room to start: no call of the model changes that.
    return limitError(
      hit,
      conn.sandbox.limits,
      source,
      `MCP server '${server}' failed to start: it hit`,
      `; it ${exitText(conn.stdio!.exit!)}${stderrPart(conn)}`,
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
        message: `MCP server '${server}' started but did not answer the initialize request within ${CONNECT_TIMEOUT_MS} ms${stderrPart(conn)}`,
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
      message: `MCP server '${server}' failed to start: ${reason}${stderrPart(conn)}`,
    },
    { cause: err },
  );
}

function httpStartError(server: string, config: Extract<McpServerConfig, { url: string }>, err: unknown): ToolError {
  const source = `mcp ${server}`;
  const where = `MCP server '${server}' could not be reached at ${config.url}`;
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
    return ToolError.of({ code: 'E_UNAVAILABLE', kind, source, message: `${where}: ${detailOf(err)}` }, { cause: err });
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
export async function requestError(
  conn: Connection,
  what: string,
  err: unknown,
  timeoutMs: number,
  drop: Drop,
): Promise<ToolError> {
  if (ToolError.is(err)) return err;
  const { server } = conn;
  const source = what === 'tools/list' ? `mcp ${server}` : `${server}.${what}`;
  if (err instanceof McpError) return rpcError(conn, what, source, err, timeoutMs, drop);
  if (err instanceof StreamableHTTPError) {
    // 404 on an open session: the server forgot it (restarted); a new connection makes a new one.
    if (err.code === 404) {
      await drop(conn);
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
    return closedError(conn, what, source, err, drop);
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

/** A JSON-RPC error of the server, or the SDK's own (a closed connection, a timeout). */
async function rpcError(
  conn: Connection,
  what: string,
  source: string,
  err: McpError,
  timeoutMs: number,
  drop: Drop,
): Promise<ToolError> {
  const { server } = conn;
  const text = stripRpcPrefix(err.message);
  switch (err.code) {
    case RpcCode.ConnectionClosed:
      return closedError(conn, what, source, err, drop);
    case RpcCode.RequestTimeout:
      return ToolError.of(
        { code: 'ETIMEDOUT', source, message: `MCP server '${server}' did not answer ${what} within ${timeoutMs} ms` },
        { cause: err },
      );
  }
  if (what === 'tools/list') {
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
        message: `${server}.${what} answered with a result that does not match its output schema: ${text}`,
      },
      { cause: err },
    );
  }
  if (err.code === RpcCode.MethodNotFound || (err.code === RpcCode.InvalidParams && isUnknownTool(text))) {
    return unknownToolError(conn, what, source, text, err);
  }
  if (err.code === RpcCode.InvalidParams) return schemaError(conn, what, source, text, err);
  return ToolError.of(
    { code: 'E_TOOL_FAILED', kind: 'execution', source, message: `MCP server '${server}' failed in ${what}: ${text}` },
    { cause: err },
  );
}

/** The server went away during a request: transient, and the connection is dropped for the retry. */
async function closedError(
  conn: Connection,
  what: string,
  source: string,
  err: unknown,
  drop: Drop,
): Promise<ToolError> {
  await drop(conn);
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
export function reportedError(conn: Connection, tool: string, content: unknown): ToolError {
  const text = contentText(content);
  const rpc = /^MCP error (-?\d+): /.exec(text);
  const code = rpc ? Number(rpc[1]) : undefined;
  const inner = stripRpcPrefix(text);
  const source = `${conn.server}.${tool}`;
  if (code === RpcCode.MethodNotFound || (code === RpcCode.InvalidParams && isUnknownTool(inner))) {
    return unknownToolError(conn, tool, source, inner);
  }
  if (code === RpcCode.InvalidParams && !/structured content/i.test(inner))
    return schemaError(conn, tool, source, inner);
  return ToolError.of({
    code: 'E_TOOL_FAILED',
    kind: 'execution',
    source,
    message: `${source} reported an error: ${text || '(no message)'}`,
  });
}

function schemaError(conn: Connection, tool: string, source: string, text: string, cause?: unknown): ToolError {
  const schema = conn.tools?.schemas.get(tool);
  const suggestion = schema ? cut(`${source} takes ${JSON.stringify(schema)}`, MAX_SUGGESTION_CHARS) : undefined;
  return ToolError.of(
    { code: 'E_SCHEMA', kind: 'execution', source, message: `${source} rejected its arguments: ${text}`, suggestion },
    { cause },
  );
}

function unknownToolError(conn: Connection, tool: string, source: string, text: string, cause?: unknown): ToolError {
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

function stderrPart(conn: Connection): string {
  const tail = conn.stderr.trim();
  return tail ? `; its stderr: ${tail}` : '';
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

/** One turn of the event loop: the last stderr chunk and the 'exit' event of a dead server land first. */
export function settled(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
