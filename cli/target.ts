/**
 * Which Temporal server and namespace a command talks to: `--address` and `--namespace` as the Temporal
 * CLI spells them, over TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE, over the local default. A command that
 * talks to a server this folder's `starry dev` did not start says which one, in one line on stderr, so a
 * stranger's server on the default port is never used unseen.
 */
import { InvalidArgumentError as CommanderInvalidArgumentError, type Command } from 'commander';
import { temporalEnv } from '../client/connection';
import { EXIT, ExitError, sayErr } from './common';

/** Commands that start and use this folder's own dev server (`--port`), where another server has no place. */
const OWN_SERVER = new Set(['dev', 'demo', 'server']);
/** Commands that talk to no Temporal server. */
const NO_SERVER = new Set(['api-token']);

/** The global flags, beside `--tenant`; every command's help shows them. */
export function addServerOptions(program: Command): void {
  program
    .option(
      '--address <host:port>',
      "the Temporal server's gRPC address (default: TEMPORAL_ADDRESS, else 127.0.0.1:7233, the local dev server)",
      parseAddress,
    )
    .option(
      '-n, --namespace <name>',
      'the Temporal namespace (default: TEMPORAL_NAMESPACE, else default)',
      parseNamespace,
    )
    .configureHelp({ showGlobalOptions: true });
}

/**
 * Before a command runs: the flags win over the environment (set there, so the command's workers and the
 * processes it starts see the same server), and a server that is not this folder's own is named.
 *
 * @throws ExitError (64) for `--address` or `--namespace` given to a command that starts its own server.
 */
export async function useServer(program: Command, command: Command): Promise<void> {
  const o = program.opts<{ address?: string; namespace?: string }>();
  const name = topLevel(program, command).name();
  if (NO_SERVER.has(name)) return;
  if (OWN_SERVER.has(name)) {
    if (o.address !== undefined || o.namespace !== undefined)
      throw new ExitError(
        `\`starry ${name}\` uses this folder's own dev server (namespace default), so --address and --namespace do not apply: ` +
          `choose its port with --port N; to work with another server, give them to the other commands (\`starry worker --address HOST:PORT\`)`,
        EXIT.USAGE,
      );
    return;
  }
  if (o.address !== undefined) process.env.TEMPORAL_ADDRESS = o.address;
  if (o.namespace !== undefined) process.env.TEMPORAL_NAMESPACE = o.namespace;
  const { address, namespace } = temporalEnv();
  if (process.env.STARRY_QUIET === '1') return;
  const { isOwnDevServer } = await import('../dev/dev-server');
  if (!isOwnDevServer(address) || namespace !== 'default')
    sayErr(`starry: using Temporal at ${address} namespace ${namespace}\n`);
}

/** The command under `starry` that `command` belongs to (`budget` for `budget create`). */
function topLevel(program: Command, command: Command): Command {
  let c = command;
  while (c.parent && c.parent !== program) c = c.parent;
  return c;
}

/** `--address`: host:port, as gRPC takes it (`[::1]:7233` for IPv6). */
function parseAddress(v: string): string {
  if (!/^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):\d{1,5}$/.test(v.trim()))
    throw new CommanderInvalidArgumentError(
      `must be HOST:PORT, e.g. 127.0.0.1:7233 or temporal.example.com:7233 (no scheme); got "${v}"`,
    );
  return v.trim();
}

/** `--namespace`: a name Temporal accepts (letters, digits, `.`, `-`, `_`). */
function parseNamespace(v: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(v.trim()))
    throw new CommanderInvalidArgumentError(
      `must be a namespace name (letters, digits, ".", "-", "_"), e.g. default or prod.a1b2c; got "${v}"`,
    );
  return v.trim();
}
