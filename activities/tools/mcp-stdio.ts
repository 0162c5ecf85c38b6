/**
 * A stdio MCP server's sandbox: the sandbox `shell.run` programs run in (confine.ts) — read-only system,
 * the task's workspace, the read-only directories and the network its policy entry grants, never as
 * root, an environment of its own (mcp-server-env.ts) and the worker's resource limits —, started by the
 * SDK's stdio transport, whose process's exit is observed.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { StdioClientTransport, type StdioServerParameters } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { McpServerConfig } from '../../core/config';
import type { LimitName, SandboxLimits } from '../../core/worker-policy';
import { ToolError } from '../../core/errors/activity';
import { SANDBOX_PATH, confinedSpawn, onSandboxPath, reapOrphanedSandboxes } from './confine';
import { WorkspaceDisk, type TenantSpace } from './disk';
import { limitOfExit } from './limits';
import { serverEnv } from './mcp-server-env';

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

export type McpSandbox = Required<Omit<McpSandboxOptions, 'space'>> & Pick<McpSandboxOptions, 'space'>;

/** What ended a stdio server's process. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * The SDK's stdio transport, which also remembers how its process ended: the SDK reports only that the
 * connection closed, and "exit code 2" is what tells a crash from a clean stop. The child is a private
 * field of the SDK's class; without it (another SDK version) the messages just lack the exit code (and
 * the sandbox's cgroup is left to the reaper).
 */
export class ObservedStdioTransport extends StdioClientTransport {
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

/** A stdio server as its sandbox sees it: what it runs in, and what the sandbox leaves on it once made. */
export interface StdioServer {
  readonly server: string;
  /** Where it runs. */
  readonly cwd: string;
  readonly sandbox: McpSandbox;
  /** Settles once its process ended: the limit its sandbox saw hit, if any. */
  ended?: Promise<LimitName | undefined>;
  /** Remove its sandbox (its cgroup), once: when its process ended, or when it never started. */
  release?: () => Promise<LimitName | undefined>;
  /** The disk of its workspace, measured at its start and after each call. */
  disk?: WorkspaceDisk;
}

/**
 * A stdio server's transport: its sandbox made, the SDK told to start the sandbox. Its environment is
 * the sandbox's own plus the config's `env` (the worker's, never: what the SDK adds from it is unset
 * before the sandbox starts), and no variable that changes how it loads code.
 */
export async function stdioTransport(
  conn: StdioServer,
  config: Extract<McpServerConfig, { command: string }>,
  workerEnv: NodeJS.ProcessEnv,
): Promise<ObservedStdioTransport> {
  const { server, sandbox } = conn;
  const source = `mcp ${server}`;
  const env = serverEnv(server, config, sandbox.roots[0] ?? conn.cwd, workerEnv);
  await checkProgram(conn, config);
  // A hard link in the workspace would be an outside file the server could read and write.
  conn.disk = await WorkspaceDisk.open({ roots: sandbox.roots, limits: sandbox.limits, source, space: sandbox.space });
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

/** The server's program is one in the sandbox, and what its policy shows it read-only exists. */
async function checkProgram(conn: StdioServer, config: { command: string }): Promise<void> {
  const { server, sandbox } = conn;
  const fail = (message: string, suggestion?: string) =>
    ToolError.of({
      code: 'E_UNAVAILABLE',
      kind: 'fatal',
      source: `mcp ${server}`,
      message: `MCP server '${server}' failed to start: ${message}`,
      suggestion,
    });
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
}

/** `exited with code 2`, `was killed by SIGKILL`; short: `exit code 2`, `killed by SIGKILL`. */
export function exitText(exit: Exit, short = false): string {
  if (exit.signal !== null) return short ? `killed by ${exit.signal}` : `was killed by ${exit.signal}`;
  return short ? `exit code ${exit.code}` : `exited with code ${exit.code}`;
}
