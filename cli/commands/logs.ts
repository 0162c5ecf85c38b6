/** `starry logs`: a task's log from its workflow history, its result JSON, or its whole transcript. */
import type { Command } from 'commander';
import type { AgentClient } from '../../client/agent-client';
import { isRequestError } from '../../core/errors';
import type { ChatMessage, TranscriptEntry } from '../../core/llm';
import type { TaskResult } from '../../core/types';
import { EXIT, ExitError, withClient } from '../common';
import { formatOutcome, jsonLine, say } from '../format';
import { printTask } from '../live';

/** Register logs. */
export function logsCommand(program: Command): void {
  program
    .command('logs')
    .description(
      "a task's log from its workflow history: each tick's model text, tool calls and results, pain, signals",
    )
    .argument(
      '<workflowId>',
      "the task workflow, e.g. agent-a1-task-3 (printed by run, submit and status); an agent's id lists its tasks",
    )
    .option('--json', 'print the task result JSON instead')
    .option(
      '--transcript',
      'print the whole transcript instead: every message the model saw and said, read from the transcript store',
    )
    .action(async (workflowId: string, o: { json?: boolean; transcript?: boolean }) => {
      await withClient(async (agents) => {
        const result = await agents.taskResult(workflowId).catch(async (err: unknown) => {
          if (!(isRequestError(err) && err.type === 'NotFound')) throw err;
          // Not a task workflow: an agent's id lists the agent's tasks instead.
          if (!(await printTasksOf(agents, workflowId, !!o.json))) throw err;
          return 'listed' as const;
        });
        if (result === 'listed') return;
        if (o.transcript) {
          say(await transcriptText(workflowId, result));
          return;
        }
        if (o.json) {
          if (!result)
            throw new ExitError(
              `task ${workflowId} is still running: \`starry logs\` without --json shows it so far`,
              EXIT.FAILED,
            );
          say(jsonLine(result));
          return;
        }
        await printTask(agents.client, workflowId, { live: false });
        say(result ? `${formatOutcome(result)}\n` : `(still running: \`starry watch\` follows it live)\n`);
      });
    });
}

/**
 * The tasks of agent `agentId` (id, status, started, workflow id), when it has any; false when there is
 * no agent of that id with tasks (an id that is not an agent's is no agent either).
 */
async function printTasksOf(agents: AgentClient, agentId: string, json: boolean): Promise<boolean> {
  const tasks = await agents.listTasks(agentId).catch(() => []);
  if (!tasks.length) return false;
  if (json) return (void say(jsonLine({ agentId, tasks })), true);
  const width = Math.max(...tasks.map((t) => t.taskId.length), 4);
  const statusWidth = Math.max(...tasks.map((t) => t.status.length), 6);
  say(
    `${agentId} is an agent; its tasks (\`starry logs WORKFLOW_ID\` prints one's log):\n` +
      `${'TASK'.padEnd(width)}  ${'STATUS'.padEnd(statusWidth)}  ${'STARTED'.padEnd(24)}  WORKFLOW_ID\n` +
      tasks
        .map(
          (t) =>
            `${t.taskId.padEnd(width)}  ${t.status.padEnd(statusWidth)}  ${t.startedAt.padEnd(24)}  ${t.workflowId}\n`,
        )
        .join(''),
  );
  return true;
}

/**
 * A finished task's whole transcript, resolved through the transcript store this process's environment
 * names (the worker's: STARRY_STORE_BUCKET or STARRY_STORE_DIR). A missing blob is an error naming it.
 */
async function transcriptText(workflowId: string, result: TaskResult | undefined): Promise<string> {
  if (!result)
    throw new ExitError(
      `task ${workflowId} is still running: its transcript is complete once it ends (\`starry watch\` follows it live)`,
      EXIT.FAILED,
    );
  if (!result.transcript?.manifest)
    throw new ExitError(
      `task ${workflowId} has no stored transcript (it ran before the transcript store, or made no LLM call): \`starry logs ${workflowId}\` shows its ticks`,
      EXIT.FAILED,
    );
  const [{ storeFromEnv, BlobMissingError }, { transcriptStore }, { tenantOfWorkflowId }] = await Promise.all([
    import('../../activities/store'),
    import('../../activities/transcript'),
    import('../../core/tenant'),
  ]);
  let messages;
  try {
    // A tenant's blobs are in its own space of the store.
    messages = await transcriptStore(storeFromEnv(), () => tenantOfWorkflowId(workflowId)).transcript(
      result.transcript.manifest,
      result.transcript.tail as TranscriptEntry[],
    );
  } catch (err) {
    if (err instanceof BlobMissingError) throw new ExitError(err.message, EXIT.FAILED);
    throw err;
  }
  return messages.map(messageText).join('\n');
}

/** One transcript message as text: who, what they said, the calls the model asked for. */
function messageText(m: ChatMessage): string {
  const head = m.role === 'tool' ? `[tool ${m.name}]` : `[${m.role}]`;
  const calls =
    m.role === 'assistant'
      ? (m.toolCalls ?? []).map((c) => `  → ${c.name} ${JSON.stringify(c.args ?? c.rawArguments ?? {})}`)
      : [];
  return [head, ...('text' in m && m.text ? [m.text] : []), ...calls, ''].join('\n');
}
