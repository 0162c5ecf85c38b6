/**
 * `starry status` (an agent's state from its workflow, or from the visibility store when no worker can
 * answer) and `starry list` (running agents, from the visibility store).
 */
import { Command, Option } from 'commander';
import { hasLiveWorker, temporalEnv } from '../../client/connection';
import type { AgentList, AgentState } from '../../core/contract';
import { AGENT_STATES } from '../../core/payloads';
import { webUiLink } from '../../workflows/messages';
import { noWorker, sayErr, uiBase, withClient } from '../common';
import { formatStatus, jsonLine, say } from '../format';

/** Register status and list. */
export function statusCommands(program: Command): void {
  program
    .command('status')
    .description("show an agent's state, queue, counters and recent tasks")
    .argument('<agent>', 'agent id')
    .option(
      '--json',
      'print the state query as JSON (with no worker polling: what the visibility store holds, with "source": "visibility store")',
    )
    .action(async (agentId: string, o: { json?: boolean }) => {
      await withClient(async (agents, connection) => {
        if (!(await hasLiveWorker(connection, temporalEnv()))) {
          // Never a worker here just to answer: it would advance the agent's tasks while we read.
          // What the search attributes say (state, lock reason, tokens), and that they are where it comes from.
          const seen = await agents.visibleState(agentId);
          if (o.json)
            say(
              jsonLine({ agentId, workflowId: agents.agentWorkflowId(agentId), ...seen, source: 'visibility store' }),
            );
          else
            say(
              `agent ${agentId}: ${seen.agentState ?? 'state unknown'}${seen.lockReason ? ` (${seen.lockReason})` : ''} · ${seen.tokensUsed ?? 0} tokens — from the visibility store\n`,
            );
          sayErr(`starry: ${noWorker(temporalEnv().address)}\n`);
          return;
        }
        const s = await agents.status(agentId);
        say(
          o.json
            ? jsonLine(s)
            : `${formatStatus(s)}\nWeb UI: ${webUiLink(uiBase(), agents.agentWorkflowId(agentId))}\n`,
        );
      });
    });

  program
    .command('list')
    .description('running agents and their state, from the visibility store (needs no worker)')
    .addOption(new Option('--state <state>', 'only agents in this state').choices(AGENT_STATES))
    .option('--json', 'print {agents, nextPageToken?} as JSON')
    .action(async (o: { state?: AgentState; json?: boolean }) => {
      await withClient(async (agents) => {
        const all: AgentList['agents'] = [];
        let token: string | undefined;
        do {
          const page = await agents.listAgents({
            ...(o.state ? { state: o.state } : {}),
            pageSize: 200,
            ...(token ? { nextPageToken: token } : {}),
          });
          all.push(...page.agents);
          token = page.nextPageToken;
        } while (token);
        all.sort((a, b) => a.agentId.localeCompare(b.agentId));
        if (o.json) return void say(jsonLine({ agents: all }));
        if (!all.length) return void say(`no running agent${o.state ? ` in ${o.state}` : ''}\n`);
        const width = Math.max(...all.map((a) => a.agentId.length), 5);
        for (const a of all)
          say(
            `${a.agentId.padEnd(width)}  ${(a.agentState ?? '?').padEnd(17)}  ${a.lockReason ?? ''}${a.tokensUsed !== undefined ? `  ${a.tokensUsed} tokens` : ''}\n`.replace(
              /\s+\n$/,
              '\n',
            ),
          );
      });
    });
}
