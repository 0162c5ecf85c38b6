/** What a human does to a running agent: `starry halt`, `starry unlock`, `starry limits`, `starry message`. */
import { Command, InvalidArgumentError as CommanderInvalidArgumentError, Option } from 'commander';
import type { AgentClient } from '../../client/agent-client';
import { hasLiveWorker, temporalEnv } from '../../client/connection';
import type { SafetyConfig } from '../../core/config';
import { kebab, LIMIT_FIELDS, LOOSER_WHEN, type LimitsInput } from '../../core/limits';
import { EXIT, ExitError, jsonObjectFlag, withClient } from '../common';
import { jsonLine, say } from '../format';

/** Register halt, unlock, limits and message. */
export function controlCommands(program: Command): void {
  haltCommand(program);
  unlockCommand(program);
  limitsCommand(program);
  messageCommand(program);
}

/** `starry halt <agent>`: SYSTEM_HALT, and what became of the agent. */
function haltCommand(program: Command): void {
  program
    .command('halt')
    .description('SYSTEM_HALT: stop the agent now, cancel the work in flight, clear its queue')
    .argument('<agent>', 'agent id')
    .option('--note <text>', 'why (kept in the agent state)')
    .option('--by <name>', 'who is halting', process.env.USER ?? 'operator')
    .action(async (agentId: string, o: { note?: string; by: string }) => {
      await withClient(async (agents, connection) => {
        await agents.halt(agentId, { by: o.by, ...(o.note ? { note: o.note } : {}) });
        if (!(await hasLiveWorker(connection, temporalEnv()))) {
          say(
            `SYSTEM_HALT recorded for agent ${agentId}: no worker is polling, so nothing of it runs now; it is STOPPED the moment a worker picks it up\n`,
          );
          return;
        }
        const s = await agents.status(agentId);
        say(
          `SYSTEM_HALT sent: agent ${agentId} is ${s.agentState}; ${s.cancelledTasks.length} queued task(s) recorded as cancelled\n`,
        );
      });
    });
}

/** `starry unlock <agent>`: admin:unlock. */
function unlockCommand(program: Command): void {
  program
    .command('unlock')
    .description('admin:unlock: leave SAFETY_LOCKOUT / ERROR_PAUSED / STOPPED')
    .argument('<agent>', 'agent id')
    .option('--resume', 'continue the suspended task with a fresh tick allowance (default: abort it)')
    .addOption(new Option('--add-tokens <n>', 'raise the token budget by N').argParser((v) => Number(v)))
    .option('--note <text>', 'why (kept in the agent state and history)')
    .option('--by <name>', 'who is unlocking', process.env.USER ?? 'operator')
    .option('--json', 'print the result as JSON')
    .action(
      async (
        agentId: string,
        o: { resume?: boolean; addTokens?: number; note?: string; by: string; json?: boolean },
      ) => {
        if (o.addTokens !== undefined && (!Number.isInteger(o.addTokens) || o.addTokens < 0)) {
          throw new ExitError(`--add-tokens must be a whole number >= 0, got ${o.addTokens}`, EXIT.USAGE);
        }
        await withClient(async (agents) => {
          const r = await agents.unlock(agentId, {
            resume: !!o.resume,
            by: o.by,
            ...(o.addTokens ? { addTokens: o.addTokens } : {}),
            ...(o.note ? { note: o.note } : {}),
          });
          say(o.json ? jsonLine(r) : `${r.message}\n`);
        }, 'required');
      },
    );
}

/** `starry limits <agent>`: show an agent's limits, or change them (admin:limits). */
function limitsCommand(program: Command): void {
  const limits = program
    .command('limits')
    .description(
      "show an agent's limits, or change them (an admin's act: only this and unlock --add-tokens loosen them; a task may only tighten them)",
    )
    .argument('<agent>', 'agent id');
  for (const field of LIMIT_FIELDS)
    limits.addOption(
      new Option(
        `--${kebab(field)} <n>`,
        `set safety.${field} (looser when ${LOOSER_WHEN[field]})${field === 'costBudgetUsd' ? '; none removes it' : ''}`,
      ).argParser(field === 'costBudgetUsd' ? dollars : wholeNumber),
    );
  limits
    .option(
      '--approval <json>',
      'replace the agent\'s approval rules, e.g. \'{"ask":["shell.run"],"deny":[]}\' (\'{"ask":[],"deny":[]}\' removes them)',
    )
    .option(
      '--budget <name>',
      "set the shared budget the agent draws from (none: it draws from none); a task's config may not change it",
    )
    .option('--note <text>', 'why (kept in the agent state)')
    .option('--by <name>', 'who is changing them', process.env.USER ?? 'admin')
    .option('--json', 'print the result as JSON')
    .action(
      async (
        agentId: string,
        o: Partial<SafetyConfig> & { approval?: string; budget?: string; note?: string; by: string; json?: boolean },
      ) => {
        // `--cost-budget-usd none` removes the cost budget: no safety value says so.
        const noCostBudget = (o.costBudgetUsd as number | null | undefined) === null;
        const safety = Object.fromEntries(
          LIMIT_FIELDS.filter((f) => o[f] !== undefined && o[f] !== null).map((f) => [f, o[f]]),
        ) as Partial<SafetyConfig>;
        const approval =
          o.approval === undefined
            ? undefined
            : jsonObjectFlag(o.approval, '--approval', '{"ask":["shell.run"],"deny":[]}');
        await withClient(async (agents) => {
          if (!Object.keys(safety).length && !approval && o.budget === undefined && !noCostBudget)
            return showLimits(agents, agentId, !!o.json);
          const r = await agents.setLimits(agentId, {
            safety,
            ...(approval ? { approval: approval as LimitsInput['approval'] } : {}),
            ...(o.budget !== undefined ? { budget: o.budget === 'none' ? null : o.budget } : {}),
            ...(noCostBudget ? { costBudgetUsd: null } : {}),
            by: o.by,
            ...(o.note ? { note: o.note } : {}),
          });
          say(o.json ? jsonLine(r) : `${r.message}\n`);
        }, 'required');
      },
    );
}

/** An agent's limits, its approval rules and (with `--json`) their change log. */
async function showLimits(agents: AgentClient, agentId: string, json: boolean): Promise<void> {
  const s = await agents.status(agentId);
  if (json)
    return void say(
      jsonLine({ limits: s.limits ?? null, approval: s.approvalRules ?? null, limitChanges: s.limitChanges }),
    );
  if (!s.limits) return void say(`agent ${agentId} has no limits yet: its first task sets them\n`);
  const rules = `approval ${s.approvalRules ? JSON.stringify(s.approvalRules) : 'none'}`;
  say(`${LIMIT_FIELDS.map((f) => `${f} ${s.limits![f] ?? 'none'}`).join('\n')}\n${rules}\n`);
}

/** `starry message <agent> <text>`: a human follow-up for the running task. */
function messageCommand(program: Command): void {
  program
    .command('message')
    .description('send a human follow-up to the running task (appended before its next LLM call)')
    .argument('<agent>', 'agent id')
    .argument('<text>', 'the message')
    .option('--by <name>', 'who is writing', process.env.USER ?? 'operator')
    .action(async (agentId: string, text: string, o: { by: string }) => {
      await withClient(async (agents) => {
        const r = await agents.message(agentId, text, o.by);
        say(
          r.delivered === 'running task'
            ? `message given to ${agentId}'s running task ${r.taskId}\n`
            : `message kept for ${agentId}'s next task (no task is running)\n`,
        );
      }, 'required');
    });
}

/** A dollar amount > 0 (`--cost-budget-usd 2.50`), or `none` (null): no cost budget. */
function dollars(v: string): number | null {
  if (v.trim() === 'none') return null;
  if (!/^\d+(\.\d+)?$/.test(v.trim()) || !(Number(v) > 0))
    throw new CommanderInvalidArgumentError(`must be a number of US dollars > 0; got "${v}"`);
  return Number(v);
}

/** A limit flag's value: a whole number > 0 (the agent checks its bounds). */
export function wholeNumber(v: string): number {
  if (!/^\d+$/.test(v.trim()) || Number(v) < 1)
    throw new CommanderInvalidArgumentError(`must be a whole number > 0; got "${v}"`);
  return Number(v);
}
