/** `starry watch`: follow an agent live, task after task, until Ctrl-C. */
import type { Command } from 'commander';
import type { AgentClient } from '../../client/agent-client';
import { withClient } from '../common';
import { formatOutcome, reasonText, say } from '../format';
import { printTask } from '../live';

/** Register watch. */
export function watchCommand(program: Command): void {
  program
    .command('watch')
    .description('follow an agent live, task after task (each tick, tool call, pain, alert), until Ctrl-C')
    .argument('<agent>', 'agent id')
    .action(async (agentId: string) => {
      await withClient(async (agents) => {
        const stop = new AbortController();
        process.once('SIGINT', () => stop.abort());
        await watchAgent(agents, agentId, stop.signal);
      }, 'required');
    });
}

/** The agent's state when it changes, and each task it runs, live, until `signal`. */
async function watchAgent(agents: AgentClient, agentId: string, signal: AbortSignal): Promise<void> {
  let head = '';
  let followed: string | undefined;
  // Tasks already finished when watching began are history; any later one is shown, even one that ran
  // entirely between two polls.
  let shown = new Set((await agents.status(agentId)).tasks.map((t) => `${t.workflowId}:${t.outcome}`));
  while (!signal.aborted) {
    const s = await agents.status(agentId);
    const now = `agent ${agentId}: ${s.agentState}${s.reason ? ` (${reasonText(s.reason)})` : ''}`;
    if (now !== head) say(`${now}\n`);
    head = now;
    const cur = s.currentTask;
    if (cur && cur.workflowId !== followed) {
      followed = cur.workflowId;
      say(`▶ ${cur.taskId} (${cur.workflowId})\n`);
      await printTask(agents.client, cur.workflowId, { signal });
      continue;
    }
    for (const done of s.tasks.filter((t) => !shown.has(`${t.workflowId}:${t.outcome}`) && t.workflowId !== cur?.workflowId)) {
      if (done.workflowId !== followed) {
        say(`▶ ${done.taskId} (${done.workflowId})\n`);
        await printTask(agents.client, done.workflowId, { signal, live: false });
      }
      say(`◀ ${formatOutcome(done)}\n`);
      if (done.workflowId === followed) followed = undefined;
    }
    shown = new Set(s.tasks.map((t) => `${t.workflowId}:${t.outcome}`));
    await new Promise((r) => setTimeout(r, 300));
  }
}
