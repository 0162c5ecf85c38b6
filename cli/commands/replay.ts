/** `starry replay`: a workflow history against the current code, naming the first non-deterministic event. */
import path from 'node:path';
import type { Command } from 'commander';
import { WorkflowNotFoundError } from '@temporalio/client';
import { temporalEnv } from '../../client/connection';
import { EXIT, ExitError, withClient } from '../common';
import { jsonLine, say } from '../format';
import { replayRecent } from './rollout';

/** Register replay. */
export function replayCommand(program: Command): void {
  program
    .command('replay')
    .description('replay a workflow history against the current code; names the first non-deterministic event')
    .argument('[workflowId]', 'a workflow on the server')
    .option('--file <history.json>', 'a history JSON file instead')
    .option(
      '--recent <n>',
      "instead: the n most recent histories of each workflow type of the deployment's current version, from the server (the replay gate of `starry promote`)",
    )
    .option('--bundle <file>', "with --recent: the workflow bundle to replay on; default this checkout's build")
    .option('--json', 'print the report as JSON')
    .action(
      async (
        workflowId: string | undefined,
        o: { file?: string; recent?: string; bundle?: string; json?: boolean },
      ) => {
        if ([workflowId, o.file, o.recent].filter((x) => x !== undefined).length !== 1)
          throw new ExitError('give one of WORKFLOW_ID, --file HISTORY.json or --recent N', EXIT.USAGE);
        if (o.recent !== undefined) return replayRecent(o.recent, o.bundle, !!o.json);
        // The report says what failed; the replayer's own warning about it would only repeat it.
        const { fetchHistory, loadHistoryFile, replayHistory } = await import('../../dev/replay');
        (await import('../../dev/embedded')).quietRuntime('ERROR');
        const report = o.file
          ? await replayHistory(loadHistoryFile(path.resolve(o.file)), path.basename(o.file, '.json'))
          : await withClient(async (agents) =>
              replayHistory(await fetchHistory(agents.client, workflowId as string).catch(unknownWorkflow), workflowId),
            );
        if (o.json) say(jsonLine(report));
        else if (report.ok)
          say(
            `replay ok: ${report.workflowId} (${report.workflowType ?? '?'}, ${report.events} events) is deterministic with the current code\n`,
          );
        else {
          say(`replay FAILED: ${report.workflowId}\n`);
          if (report.firstBadEvent)
            say(`first non-deterministic event: #${report.firstBadEvent.eventId} ${report.firstBadEvent.eventType}\n`);
          say(`${report.error}\n`);
        }
        if (!report.ok) process.exitCode = EXIT.FAILED;
      },
    );
}

/** A workflow id the server does not have: say which server, and where ids come from. */
function unknownWorkflow(err: unknown): never {
  if (!(err instanceof WorkflowNotFoundError)) throw err;
  const { address, namespace } = temporalEnv();
  throw new ExitError(
    `no workflow ${err.workflowId} on ${address} (namespace ${namespace}) to replay: give the id of one on this server (\`starry list\` names the agents' workflows, agent-<id>; \`starry status <agent>\` its tasks, agent-<id>-task-<n>), or a history file with --file HISTORY.json`,
    EXIT.FAILED,
  );
}
