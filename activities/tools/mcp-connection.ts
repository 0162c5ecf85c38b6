/** One pooled MCP connection (mcp.ts): a started (or starting) server and what we know about it. */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpServerConfig } from '../../core/config';
import type { ToolSpec } from '../../core/llm';
import type { ObservedStdioTransport, StdioServer } from './mcp-stdio';

/** Starting a server may download it first (`npx -y ...`): generous, and separate from a call's timeout. */
export const CONNECT_TIMEOUT_MS = 30_000;

/** One pooled connection: a started (or starting) server and what we know about it. */
export interface Connection extends StdioServer {
  readonly key: string;
  readonly config: McpServerConfig;
  readonly client: Client;
  /** Set once the server's sandbox is ready (stdio), or at once (HTTP). */
  stdio?: ObservedStdioTransport;
  http?: StreamableHTTPClientTransport;
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
