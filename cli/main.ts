/**
 * `starry`: run, submit, watch, list, logs, halt, unlock, resubmit, budget, replay, versions, promote; api, dev, worker. Each command
 * (or group) is a module of cli/commands/; `main` wires them and turns what they throw into the exit code
 * (the README's table, cli/common.ts).
 */
import { Command, CommanderError } from 'commander';
import { isRequestError } from '../core/errors';
import { checkTenant } from '../core/tenant';
import { actIn, EXIT, ExitError, sayErr } from './common';
import { say } from './format';
import { approvalCommands } from './commands/approvals';
import { budgetCommands } from './commands/budget';
import { controlCommands } from './commands/control';
import { devCommands } from './commands/dev';
import { logsCommand } from './commands/logs';
import { replayCommand } from './commands/replay';
import { rolloutCommands } from './commands/rollout';
import { serveCommands } from './commands/serve';
import { statusCommands } from './commands/status';
import { taskCommands } from './commands/task';
import { addServerOptions, useServer } from './target';
import { watchCommand } from './commands/watch';

export { EXIT, exitCodeFor } from './common';

/** The commands in the order `starry --help` lists them. */
const COMMANDS = [
  taskCommands,
  statusCommands,
  watchCommand,
  logsCommand,
  controlCommands,
  approvalCommands,
  budgetCommands,
  replayCommand,
  rolloutCommands,
  serveCommands,
  devCommands,
];

/**
 * Run the CLI on `argv` (without node and the script) and return its exit code.
 *
 * ```ts
 * process.exitCode = await main(['status', 'a1', '--json']);
 * ```
 */
export async function main(argv: string[]): Promise<number> {
  // Before anything parses: the build id reads the workflow bundle, which no other command needs here.
  if (argv.length === 1 && ['--version', '-V'].includes(argv[0]!)) {
    say(`${(await import('./version')).versionText()}\n`);
    return EXIT.OK;
  }
  const program = new Command('starry')
    .description('Durable, self-correcting AI agents on Temporal')
    .exitOverride()
    .option('-V, --version', 'print the package version and the build id of its workflows (the worker version)')
    .configureOutput({ writeErr: (s) => sayErr(s) })
    .option(
      '--tenant <id>',
      "act within this tenant: agent ids are the tenant's own (its agent x is acme:x inside), list shows its agents only (default: STARRY_TENANT; none: every agent, by its full id)",
      process.env.STARRY_TENANT || undefined,
    )
    .hook('preAction', async (_program, command) => {
      if (program.opts<{ version?: boolean }>().version)
        throw new ExitError('--version stands alone: `starry --version`', EXIT.USAGE);
      const t = program.opts<{ tenant?: string }>().tenant;
      actIn(t === undefined ? undefined : checkTenant(t, '--tenant (or STARRY_TENANT)'));
      await useServer(program, command);
    });
  addServerOptions(program);
  for (const add of COMMANDS) add(program);
  markRequired(program);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return Number(process.exitCode ?? EXIT.OK);
  } catch (err) {
    return report(err);
  }
}

/** Commander lists a required option like any other: its help says "(required)". */
function markRequired(command: Command): void {
  for (const option of command.options) if (option.mandatory) option.description += ' (required)';
  for (const sub of command.commands) markRequired(sub);
}

/** Say what went wrong (once, on stderr) and return the exit code it means. */
function report(err: unknown): number {
  if (err instanceof CommanderError) {
    // Help and version are not errors; commander already printed them.
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0)
      return EXIT.OK;
    return EXIT.USAGE;
  }
  if (err instanceof ExitError) {
    sayErr(`starry: ${err.message}\n`);
    return err.code;
  }
  if (isRequestError(err)) {
    // Typed, never read from the message: a bad request is a usage error; a refusal (the agent is locked, or
    // only an admin may do it) is 2.
    sayErr(`starry: ${err.message}\n`);
    return err.type === 'InvalidArgument'
      ? EXIT.USAGE
      : err.type === 'Refused' || err.type === 'PermissionDenied'
        ? EXIT.LOCKED
        : EXIT.FAILED;
  }
  sayErr(`starry: ${err instanceof Error ? err.message : String(err)}\n`);
  return EXIT.FAILED;
}
