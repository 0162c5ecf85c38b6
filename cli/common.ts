/**
 * What every `starry` command shares: the exit codes (the README's table: 0 completed · 1 failed, or
 * unknown, or no worker · 2 locked/stopped/refused · 64 usage · 130 or 143 detached), the tenant the run acts
 * in, the client connection with a worker when the command needs one, and the process's signals.
 */
import { InvalidArgumentError as CommanderInvalidArgumentError } from 'commander';
import type { Connection } from '@temporalio/client';
import { AgentClient } from '../client/agent-client';
import { connectClient, hasLiveWorker, TASK_QUEUE, temporalEnv } from '../client/connection';
import { isLocked, type TaskResult } from '../core/types';
// The native worker is imported by the commands that start one (`await import`): the others start without it.
import type { EmbeddedWorker } from '../dev/embedded';
import { say } from './format';

export const EXIT = { OK: 0, FAILED: 1, LOCKED: 2, USAGE: 64 } as const;

/**
 * An error that carries the exit code the CLI should end with.
 *
 * ```ts
 * throw new ExitError('give a WORKFLOW_ID or --file HISTORY.json', EXIT.USAGE);
 * ```
 */
export class ExitError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** The exit code for a finished task (the README's exit-code table). */
export function exitCodeFor(r: TaskResult): number {
  if (r.outcome === 'COMPLETED') return EXIT.OK;
  if (r.outcome === 'FAILED' && !isLocked(r.agentState)) return EXIT.FAILED;
  return EXIT.LOCKED;
}

/** Text to stderr, escaped like all output (cli/format.ts `say`). */
export const sayErr = (text: string) => say(text, process.stderr);

/** The tenant this run of the CLI acts in (`--tenant`, STARRY_TENANT), set before any command runs. */
let tenant: string | undefined;

/** Set the tenant every later client acts in (main's `--tenant`, checked). */
export function actIn(t: string | undefined): void {
  tenant = t;
}

/** The tenant this run acts in, if any. */
export function actingTenant(): string | undefined {
  return tenant;
}

/** How a command that needs a worker treats a task queue nobody polls. */
export type WorkerNeed = 'auto' | 'never' | 'required';

/**
 * Connect, and for commands that need an answer from the agent workflow (queries, updates), run a worker
 * here when none is polling (`auto`) or refuse to go on (`required`): without one, a query has nobody to
 * answer it. The client acts in the run's tenant.
 *
 * ```ts
 * await withClient(async (agents) => say(formatStatus(await agents.status('a1'))), 'required');
 * ```
 */
export async function withClient<T>(
  fn: (agents: AgentClient, connection: Connection) => Promise<T>,
  worker: WorkerNeed = 'never',
): Promise<T> {
  const env = temporalEnv();
  const connection = await connectClient(env);
  if (worker === 'required' && !(await hasLiveWorker(connection, env))) {
    await connection.close();
    throw new ExitError(noWorker(env.address), EXIT.FAILED);
  }
  const embedded = await workerIfNeeded(connection, worker === 'required' ? 'never' : worker);
  try {
    return await fn(
      new AgentClient({
        connection,
        namespace: env.namespace,
        taskQueue: TASK_QUEUE,
        ...(tenant !== undefined ? { tenant } : {}),
      }),
      connection,
    );
  } finally {
    await embedded?.stop();
    await connection.close();
  }
}

/** Why a command that needs the agent's workflow to answer cannot run, and what to do. */
export function noWorker(address: string): string {
  return `no worker is polling task queue ${TASK_QUEUE} on ${address}, and only a worker can answer an agent: start one with \`starry dev\` (local) or \`starry worker\`, then try again (\`starry run\` starts one itself)`;
}

/**
 * Start a worker here when the command needs one (so `starry run` works on its own), never taking over
 * what this folder does not own. `auto`: none when a worker polls; on this folder's own dev server one
 * whose build takes the deployment over (a developer's machine runs the build it has now); on any other
 * server none, and the command stops saying what to do. `always`: one on any server, which joins its
 * deployment as a version of its own build and changes no routing (its version becomes current only
 * where the deployment has none), as the line it prints says.
 *
 * @throws ExitError (1) for `auto` against a server this folder did not start and that no worker polls.
 */
export async function workerIfNeeded(
  connection: Connection,
  mode: 'auto' | 'always' | 'never',
): Promise<EmbeddedWorker | undefined> {
  if (mode === 'never') return undefined;
  const env = temporalEnv();
  if (mode === 'auto' && (await hasLiveWorker(connection, env))) return undefined;
  const own = (await import('../dev/dev-server')).isOwnDevServer(env.address);
  if (!own && mode === 'auto') throw new ExitError(noWorkerToRun(env.address), EXIT.FAILED);
  const { startEmbeddedWorker } = await import('../dev/embedded');
  const worker = await startEmbeddedWorker(env, TASK_QUEUE, own ? { versioning: { makeCurrent: 'take-over' } } : {});
  if (!own)
    sayErr(
      `running a worker in this process for ${env.address}, a server this folder did not start: it joins deployment ${worker.worker.version.deploymentName} as version ${worker.worker.version.buildId} and changes no routing (if another version is current, new agents and tasks go to that version's workers)\n`,
    );
  return worker;
}

/** Why `starry run` starts no worker against a server this folder did not start, and what to do. */
export function noWorkerToRun(address: string): string {
  return (
    `no worker is polling task queue ${TASK_QUEUE} on ${address}, a Temporal server this folder did not start: ` +
    "`starry run` runs a worker of its own only on this folder's dev server (`starry dev`), where its build may take the agents over. " +
    "Start a worker where this server's agents run (`starry worker`), or pass `--worker always` to run one in this process " +
    '(it joins as a version of its own build and changes no routing; moving agents to a new build is a deploy act: docs/ARCHITECTURE.md#versioning)'
  );
}

/** Where the Web UI of the server we talk to is (dev server: gRPC port + 1000). */
export function uiBase(): string {
  if (process.env.STARRY_UI_URL) return process.env.STARRY_UI_URL.replace(/\/$/, '');
  const { address } = temporalEnv();
  const [host, port] = address.split(':');
  return `http://${host}:${Number(port ?? 7233) + 1000}`;
}

/** `--port`-like options: a whole number 0..65535. */
export function parsePort(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 65535)
    throw new CommanderInvalidArgumentError(`must be a port number 0..65535; got "${v}"`);
  return Number(v);
}

/**
 * Run `fn` on the first Ctrl-C or SIGTERM (a service manager, `kill`, a CI timeout) and exit 130 or 143;
 * returns the function that removes the handlers.
 */
export function onInterrupt(fn: () => void): () => void {
  const handlers = { SIGINT: 130, SIGTERM: 143 } as const;
  const handler = (signal: NodeJS.Signals) => {
    fn();
    process.stderr.write('', () => process.exit(handlers[signal as keyof typeof handlers]));
  };
  for (const signal of Object.keys(handlers)) process.once(signal, handler);
  return () => {
    for (const signal of Object.keys(handlers)) process.off(signal, handler);
  };
}

/** Resolves on the first SIGINT or SIGTERM (the foreground commands: dev, api). */
export function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

/**
 * A flag that takes a JSON object, parsed, or a usage error saying what was wrong, with an example.
 *
 * ```ts
 * jsonObjectFlag('{"path":"a.md"}', '--args', '{"path":"notes.md"}') // { path: 'a.md' }
 * ```
 */
export function jsonObjectFlag(text: string, flag: string, example: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ExitError(
      `${flag} is not valid JSON (${(err as Error).message}): give an object, e.g. '${example}'`,
      EXIT.USAGE,
    );
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new ExitError(`${flag} must be a JSON object, e.g. '${example}'`, EXIT.USAGE);
  return value as Record<string, unknown>;
}
