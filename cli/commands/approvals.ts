/** A human steers an agent: `starry approvals`, `starry approve`, `starry deny` (tool calls that wait for approval). */
import { Command } from 'commander';
import { approveCommand, denyCommand } from '../../core/approval';
import type { ApprovalList } from '../../core/contract';
import { jsonObjectFlag, withClient } from '../common';
import { jsonLine, say } from '../format';

/** Register approvals, approve and deny. */
export function approvalCommands(program: Command): void {
  program
    .command('approvals')
    .description('tool calls that wait for a human decision: of one agent, or of every agent that waits')
    .argument('[agent]', 'agent id (default: every agent in WAITING_FOR_APPROVAL)')
    .option('--json', 'print {approvals: [...]} as JSON')
    .action(async (agentId: string | undefined, o: { json?: boolean }) => {
      await withClient(async (agents) => {
        const list = await agents.approvals(agentId);
        say(o.json ? jsonLine(list) : formatApprovals(list, agentId));
      });
    });

  program
    .command('approve')
    .description('approve a waiting tool call: it runs (with --args, with those arguments instead of the model’s)')
    .argument('<agent>', 'agent id')
    .argument('<callId>', 'the call, as `starry approvals` lists it (t3.0)')
    .option('--note <text>', 'why (recorded with the decision)')
    .option('--args <json>', 'run the call with these arguments (a JSON object, checked against the tool)')
    .option('--by <name>', 'who approves', process.env.USER ?? 'approver')
    .option('--json', 'print the decision as JSON')
    .action(
      async (agentId: string, callId: string, o: { note?: string; args?: string; by: string; json?: boolean }) => {
        const args = o.args === undefined ? undefined : jsonObjectFlag(o.args, '--args', '{"path":"notes.md"}');
        await withClient(async (agents) => {
          const d = await agents.decide(agentId, {
            callId,
            decision: 'approve',
            by: o.by,
            ...(o.note ? { note: o.note } : {}),
            ...(args ? { args } : {}),
          });
          say(
            o.json
              ? jsonLine(d)
              : `approved ${callId} of agent ${agentId}${args ? ' with edited arguments' : ''}: it runs now\n`,
          );
        }, 'required');
      },
    );

  program
    .command('deny')
    .description('deny a waiting tool call: it does not run, and the model reads your reason as pain')
    .argument('<agent>', 'agent id')
    .argument('<callId>', 'the call, as `starry approvals` lists it (t3.0)')
    .requiredOption('--reason <text>', 'why; the model reads it')
    .option('--by <name>', 'who denies', process.env.USER ?? 'approver')
    .option('--json', 'print the decision as JSON')
    .action(async (agentId: string, callId: string, o: { reason: string; by: string; json?: boolean }) => {
      await withClient(async (agents) => {
        const d = await agents.decide(agentId, { callId, decision: 'deny', by: o.by, reason: o.reason });
        say(o.json ? jsonLine(d) : `denied ${callId} of agent ${agentId}: the model reads why\n`);
      }, 'required');
    });
}

/** One block per waiting call: who, which call, its arguments, and the commands that decide it. */
function formatApprovals(list: ApprovalList, agentId?: string): string {
  if (!list.approvals.length) return `no call waits for approval${agentId ? ` at agent ${agentId}` : ''}\n`;
  return list.approvals
    .map((p) =>
      [
        `${p.agentId} ${p.callId} · ${p.tool} ${JSON.stringify(p.args)}`,
        `  task ${p.taskId} · tick ${p.tick} · rule ${p.rule}${p.from === 'worker' ? " (the worker's)" : ''} · asked ${p.askedAt} · expires ${p.expiresAt}`,
        `  ${approveCommand(p.agentId, p.callId)}`,
        `  ${denyCommand(p.agentId, p.callId)}`,
      ].join('\n'),
    )
    .join('\n')
    .concat('\n');
}
