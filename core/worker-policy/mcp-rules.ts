/**
 * The policy's rules for a task's MCP servers: which programs the worker starts as stdio servers and what
 * each one's sandbox grants (`mcpCommands`), which of the worker's variables may go to which server as
 * `${env:NAME}` (`mcpEnv`, core/mcp-env.ts), and what a config asks beyond them.
 */
import { z } from 'zod';
import { bindingReaches, describeServer, envName, type McpEnvPolicy } from '../mcp-env';
import { changesCodeLoading, ENV_TEMPLATE, WHOLE_TEMPLATE } from './env-rules';
import { hostEntryWithin, hostOf, isHostAllowed } from './hosts';
import { absolutePath } from './paths';

const McpCommandObjectSchema = z
  .object({
    command: z.string().min(1),
    /** The exact args a config must give; absent: any. */
    args: z.array(z.string()).optional(),
    /** The server reaches the network (its own network namespace otherwise: loopback only). */
    network: z.boolean().default(false),
    /** Directories it sees read-only besides /usr: its code and node_modules, say. */
    readOnly: z.array(absolutePath).default([]),
    /** Variables a config may give a value of its own (a `${env:NAME}` of `mcpEnv` may go in any other). */
    env: z
      .array(
        envName.refine((n) => !changesCodeLoading(n), {
          error: (i) => `${String(i.input)} changes how a program loads code: no config may set it`,
        }),
      )
      .default([]),
  })
  .strict();

/** One `mcpCommands` entry: a program name (no network, nothing more to see, any args) or the whole entry. */
export const McpCommandSchema = z
  .union([z.string().min(1), McpCommandObjectSchema], {
    error: 'an mcpCommands entry is a program name or {command, args?, network?, readOnly?, env?}',
  })
  .transform((entry) =>
    typeof entry === 'string' ? { command: entry, network: false, readOnly: [], env: [] } : entry,
  );

export type McpCommandPolicy = z.output<typeof McpCommandObjectSchema>;

/** The parts of the policy these rules read. */
export interface McpPolicy {
  httpAllow: readonly string[];
  mcpCommands: readonly McpCommandPolicy[];
  mcpEnv: readonly McpEnvPolicy[];
}

/** A task's MCP server as its config gives it: a stdio command or an HTTP URL. */
export type McpServerSpec =
  | { command: string; args?: string[]; env?: Record<string, string> }
  | { url: string; headers?: Record<string, string> };

/**
 * What the server `server` of a task's config asks beyond the policy: a `${env:NAME}` the policy does not
 * let go there, a stdio command, args or env its entry does not allow, a URL's host `httpAllow` does not.
 */
export function mcpServerRefusals(policy: McpPolicy, server: string, spec: McpServerSpec): string[] {
  const wider: string[] = [];
  const templates = Object.values(('command' in spec ? spec.env : spec.headers) ?? {}).join('\n');
  for (const name of new Set([...templates.matchAll(ENV_TEMPLATE)].map((m) => m[1]!))) {
    const problem = mcpEnvProblem(policy, name, spec);
    if (problem) wider.push(`tools.mcp.${server}: \${env:${name}} ${problem}`);
  }
  if ('command' in spec) wider.push(...stdioServerRefusals(policy, server, spec));
  if ('url' in spec) {
    const host = hostOf(spec.url);
    if (host === undefined || !hostEntryWithin(host, policy.httpAllow)) {
      wider.push(
        `tools.mcp.${server}: the host of '${spec.url}' is not allowed by the worker (allowed: ${policy.httpAllow.join(', ') || 'none'})`,
      );
    }
  }
  return wider;
}

/**
 * Why `${env:NAME}` may not go to the server `spec`, or undefined: the policy must list the variable,
 * and a bound entry must name the server's host, or the pinned `mcpCommands` entry it runs as.
 */
function mcpEnvProblem(policy: McpPolicy, name: string, spec: McpServerSpec): string | undefined {
  const entry = policy.mcpEnv.find((e) => e.name === name);
  if (!entry)
    return `is not a variable the worker passes to MCP servers (allowed: ${policy.mcpEnv.map((e) => e.name).join(', ') || 'none'})`;
  if (entry.hosts === undefined && entry.commands === undefined) return undefined;
  let url: URL | undefined;
  if ('url' in spec) {
    try {
      url = new URL(spec.url);
    } catch {
      url = undefined;
    }
  }
  if (url) {
    if (isHostAllowed(url, entry.hosts ?? [])) return undefined;
  } else if ('command' in spec) {
    if (bindingReaches(entry.commands ?? [], mcpCommandEntry(policy, spec.command, spec.args))) return undefined;
  }
  const where = [...(entry.hosts ?? []).map((h) => `host ${h}`), ...(entry.commands ?? []).map(describeServer)];
  const to =
    'url' in spec
      ? `'${spec.url}'`
      : `the command '${spec.command}'${spec.args?.length ? ` with the args ${JSON.stringify(spec.args)}` : ''}`;
  return `may go only to ${where.join(', ') || 'no MCP server'}, not to ${to}`;
}

/**
 * The policy's entry for the stdio server `command args`: an entry that pins exactly these args first,
 * else one that leaves them free; undefined when the worker does not start it.
 *
 * ```ts
 * mcpCommandEntry(policy, 'node', ['/opt/mcp/github.js']) // { command: 'node', args: [...], network: true, ... }
 * ```
 */
export function mcpCommandEntry(
  policy: Pick<McpPolicy, 'mcpCommands'>,
  command: string,
  args: readonly string[] = [],
): McpCommandPolicy | undefined {
  const mine = policy.mcpCommands.filter((e) => e.command === command);
  return (
    mine.find((e) => e.args !== undefined && e.args.length === args.length && e.args.every((a, i) => a === args[i])) ??
    mine.find((e) => e.args === undefined)
  );
}

/** What a stdio server's config asks beyond its policy entry: the command or its args, and its env's names. */
function stdioServerRefusals(
  policy: McpPolicy,
  server: string,
  spec: { command: string; args?: string[]; env?: Record<string, string> },
): string[] {
  const where = `tools.mcp.${server}`;
  const entry = mcpCommandEntry(policy, spec.command, spec.args);
  if (!entry) {
    const pinned = policy.mcpCommands.filter((e) => e.command === spec.command);
    if (pinned.length) {
      return [
        `${where}: the worker starts '${spec.command}' only with the args ${pinned.map((e) => JSON.stringify(e.args)).join(' or ')} (asked: ${JSON.stringify(spec.args ?? [])})`,
      ];
    }
    const allowed = [...new Set(policy.mcpCommands.map((e) => e.command))].join(', ') || 'none';
    return [
      `${where}: the command '${spec.command}' is not one the worker starts as an MCP server (allowed: ${allowed})`,
    ];
  }
  const refused: string[] = [];
  const names = Object.keys(spec.env ?? {});
  const loaders = names.filter(changesCodeLoading);
  if (loaders.length) {
    refused.push(
      `${where}.env: ${loaders.join(', ')} changes how the server loads code; no config may set it (nor PATH, HOME, LD_*, NODE_OPTIONS, PYTHONPATH and their like)`,
    );
  }
  const free = names.filter(
    (n) => !changesCodeLoading(n) && !WHOLE_TEMPLATE.test(spec.env![n]!) && !entry.env.includes(n),
  );
  if (free.length) {
    refused.push(
      `${where}.env: ${free.join(', ')} ${free.length > 1 ? 'have values' : 'has a value'} of the config's own, which the worker allows only for the names its policy lists for '${spec.command}' (listed: ${entry.env.join(', ') || 'none'}); pass a worker variable as \${env:NAME} instead`,
    );
  }
  return refused;
}
