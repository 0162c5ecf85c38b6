/**
 * Which stdio MCP servers a worker secret bound by `mcpEnv` may be given to (docs/ARCHITECTURE.md, "MCP
 * servers"). A binding names a command, every `mcpCommands` entry of which must then pin its args, or one
 * pinned entry, `{command, args}`. A command whose entry leaves the args free runs whatever code a task's
 * args name (`node -e …`, a script the task wrote), so a secret bound to it would reach any code: such a
 * binding is refused when the policy is read, and a server a binding does not name never gets the secret
 * (core/worker-policy/ checks both, at submit and in the tool activity).
 */
import { z } from 'zod';

/** One server an `mcpEnv` binding names: a command, or one entry of it with its args. */
export type McpEnvServer = string | { command: string; args: string[] };

/** An `mcpCommands` entry as a binding sees it: its program, and its args when it pins them. */
export interface PinnableEntry {
  command: string;
  args?: readonly string[] | undefined;
}

/** The name of an environment variable. */
export const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');

/** A `commands` entry of an `mcpEnv` binding. */
const McpEnvServerSchema = z.union([
  z.string().min(1),
  z.object({ command: z.string().min(1), args: z.array(z.string()) }).strict(),
]);

const McpEnvObjectSchema = z
  .object({
    name: envName,
    /** MCP URLs (their host, entries as `httpAllow`) the variable may be sent to. */
    hosts: z.array(z.string().min(1)).optional(),
    /**
     * Stdio MCP servers the variable may be given to: a command whose `mcpCommands` entries all pin
     * their args, or one entry, `{command, args}` (below).
     */
    commands: z.array(McpEnvServerSchema).optional(),
  })
  .strict();

/** One `mcpEnv` entry: a variable name (any MCP server the policy allows) or one bound to hosts and stdio servers. */
export const McpEnvSchema = z
  .union([envName, McpEnvObjectSchema], {
    error:
      'an mcpEnv entry is an environment variable name or {name, hosts?, commands?} (commands: a command, or an entry {command, args} of mcpCommands)',
  })
  .transform((entry) => (typeof entry === 'string' ? { name: entry } : entry));

export type McpEnvPolicy = z.output<typeof McpEnvObjectSchema>;

const sameArgs = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * True when a binding to `servers` reaches a server that runs as `entry` (the policy's entry for its
 * command and args): only an entry that pins its args, named by its command or by itself.
 *
 * ```ts
 * bindingReaches(['node'], { command: 'node', args: ['/opt/mcp/gh.js'] }) // true
 * bindingReaches(['node'], { command: 'node' })                         // false: free args run any code
 * ```
 */
export function bindingReaches(servers: readonly McpEnvServer[], entry: PinnableEntry | undefined): boolean {
  const pinned = entry?.args;
  if (!entry || pinned === undefined) return false;
  return servers.some((s) =>
    typeof s === 'string' ? s === entry.command : s.command === entry.command && sameArgs(s.args, pinned),
  );
}

/** A server of a binding as a message names it: `command node` or `node ["/opt/mcp/gh.js"]`. */
export function describeServer(server: McpEnvServer): string {
  return typeof server === 'string' ? `command ${server}` : `${server.command} ${JSON.stringify(server.args)}`;
}

/**
 * What is wrong with each stdio binding of `mcpEnv` against `mcpCommands`, with its path in the policy:
 * a command with an entry that leaves its args free, a command or an entry `mcpCommands` does not have.
 *
 * ```ts
 * mcpEnvBindingIssues([{ name: 'GH_TOKEN', commands: ['node'] }], [{ command: 'node' }])
 * // [{ path: ['mcpEnv', 0, 'commands', 0], message: "GH_TOKEN is bound to the command 'node', but mcpCommands.0 leaves its args free …" }]
 * ```
 */
export function mcpEnvBindingIssues(
  mcpEnv: ReadonlyArray<{ name: string; commands?: readonly McpEnvServer[] | undefined }>,
  mcpCommands: readonly PinnableEntry[],
): Array<{ path: Array<string | number>; message: string }> {
  const issues: Array<{ path: Array<string | number>; message: string }> = [];
  mcpEnv.forEach(({ name, commands }, i) =>
    commands?.forEach((server, j) => {
      const message = serverIssue(name, server, mcpCommands);
      if (message) issues.push({ path: ['mcpEnv', i, 'commands', j], message });
    }),
  );
  return issues;
}

function serverIssue(name: string, server: McpEnvServer, mcpCommands: readonly PinnableEntry[]): string | undefined {
  const command = typeof server === 'string' ? server : server.command;
  const entries = mcpCommands.map((e, index) => ({ ...e, index })).filter((e) => e.command === command);
  const pin = `{"command": "${command}", "args": ["/opt/mcp/server.js"]}`;
  if (typeof server !== 'string') {
    if (entries.some((e) => e.args !== undefined && sameArgs(e.args, server.args))) return undefined;
    const pinned = entries.filter((e) => e.args !== undefined).map((e) => JSON.stringify(e.args));
    return `${name} is bound to ${describeServer(server)}, which is no mcpCommands entry (pinned entries of '${command}': ${pinned.join(', ') || 'none'}): bind it to an entry with exactly the args mcpCommands pins, or add that entry`;
  }
  if (!entries.length)
    return `${name} is bound to the command '${command}', which no mcpCommands entry names: add an entry that pins its args, ${pin}, or correct the name`;
  const free = entries.find((e) => e.args === undefined);
  if (free)
    return `${name} is bound to the command '${command}', but mcpCommands.${free.index} leaves its args free, so ${name} would reach whatever code a task's args make '${command}' run (inline code such as node -e …, a script the task wrote): pin that entry's args, ${pin}, or bind ${name} to one pinned entry, {"name": "${name}", "commands": [${pin}]}`;
  return undefined;
}
