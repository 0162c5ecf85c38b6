/**
 * `starry budget create|raise|show|list`: the shared budgets agents draw from (`budget` in their config),
 * an admin's to create and raise; every change is recorded with who made it (`--by`).
 */
import { Command, Option } from 'commander';
import type { BudgetStatus } from '../../client/budget-client';
import { withClient } from '../common';
import { jsonLine, say } from '../format';
import { wholeNumber } from './control';

/** Register `budget` and its subcommands. */
export function budgetCommands(program: Command): void {
  const budget = program
    .command('budget')
    .description(
      'shared budgets: agents whose config says `"budget": "<name>"` draw their tokens from it and all stop (STOPPED, SHARED_BUDGET_EXHAUSTED) when it is spent',
    );
  createCommand(budget);
  raiseCommand(budget);
  showCommand(budget);
  listCommand(budget);
}

/** `starry budget create <name> --tokens N`. */
function createCommand(budget: Command): void {
  budget
    .command('create')
    .description('create a shared budget of N tokens')
    .argument('<name>', 'the budget name, e.g. team-a')
    .requiredOption('--tokens <n>', 'its limit in tokens', wholeNumber)
    .addOption(
      new Option('--lease-tokens <n>', 'tokens an agent takes at a time (default 10000)').argParser(wholeNumber),
    )
    .addOption(
      new Option(
        '--lease-ttl <seconds>',
        "a lease not renewed for this long returns (a lost worker's; default 600)",
      ).argParser(wholeNumber),
    )
    .option('--note <text>', 'why (kept in its audit log)')
    .option('--by <name>', 'who is creating it', process.env.USER ?? 'admin')
    .option('--json', 'print the budget as JSON')
    .action(
      async (
        name: string,
        o: { tokens: number; leaseTokens?: number; leaseTtl?: number; note?: string; by: string; json?: boolean },
      ) => {
        await withClient(async (agents) => {
          const s = await agents.budgets().create({
            name,
            tokens: o.tokens,
            ...(o.leaseTokens !== undefined ? { leaseTokens: o.leaseTokens } : {}),
            ...(o.leaseTtl !== undefined ? { leaseTtlMs: o.leaseTtl * 1000 } : {}),
            by: o.by,
            ...(o.note ? { note: o.note } : {}),
          });
          say(o.json ? jsonLine(s) : `created budget ${s.name}: ${s.limit} tokens\n`);
        }, 'required');
      },
    );
}

/** `starry budget raise <name> --tokens N`. */
function raiseCommand(budget: Command): void {
  budget
    .command('raise')
    .description("raise a shared budget's limit by N tokens (agents it stopped continue once unlocked)")
    .argument('<name>', 'the budget name')
    .requiredOption('--tokens <n>', 'tokens to add', wholeNumber)
    .option('--note <text>', 'why (kept in its audit log)')
    .option('--by <name>', 'who is raising it', process.env.USER ?? 'admin')
    .option('--json', 'print the budget as JSON')
    .action(async (name: string, o: { tokens: number; note?: string; by: string; json?: boolean }) => {
      await withClient(async (agents) => {
        const s = await agents
          .budgets()
          .raise(name, { tokens: o.tokens, by: o.by, ...(o.note ? { note: o.note } : {}) });
        say(o.json ? jsonLine(s) : `budget ${s.name} raised by ${o.tokens}: ${summary(s)}\n`);
      }, 'required');
    });
}

/** `starry budget show <name>`. */
function showCommand(budget: Command): void {
  budget
    .command('show')
    .description(
      "a shared budget's books: limit, spent, leased, available, its leases and its audit log (who changed what)",
    )
    .argument('<name>', 'the budget name')
    .option('--json', 'print the budget as JSON')
    .action(async (name: string, o: { json?: boolean }) => {
      await withClient(async (agents) => {
        const s = await agents.budgets().show(name);
        say(o.json ? jsonLine(s) : formatBudget(s));
      }, 'required');
    });
}

/** `starry budget list`. */
function listCommand(budget: Command): void {
  budget
    .command('list')
    .description('the shared budgets (of the --tenant), one a line')
    .option('--json', 'print them as JSON')
    .action(async (o: { json?: boolean }) => {
      await withClient(async (agents) => {
        const all = await agents.budgets().list();
        if (o.json) return void say(jsonLine({ budgets: all }));
        say(
          all.length
            ? all.map((s) => `${s.name}  ${summary(s)}\n`).join('')
            : 'no budgets yet: `starry budget create <name> --tokens N`\n',
        );
      }, 'required');
    });
}

function summary(s: BudgetStatus): string {
  return `limit ${s.limit} · spent ${s.spent} · leased ${s.leased} · available ${s.available} · ${s.leases.length} lease(s)`;
}

/** `starry budget show`: the books, the leases out, then the audit log, oldest first. */
export function formatBudget(s: BudgetStatus): string {
  const leases = s.leases.map(
    (l) =>
      `  ${l.id} ${l.holder}: ${l.amount} granted, ${l.used} used, expires ${new Date(l.expiresAt).toISOString()}\n`,
  );
  const audit = s.audit.map(
    (e) =>
      `  ${e.at} ${e.action} ${e.tokens} by ${e.by}${e.leaseId ? ` (${e.leaseId})` : ''}${e.note ? ` — ${e.note}` : ''}\n`,
  );
  return [
    `budget ${s.name}: ${summary(s)}\n`,
    `leases of ${s.leaseTokens} tokens, returned when not renewed for ${s.leaseTtlMs / 1000} s; created ${s.createdAt} by ${s.createdBy}\n`,
    ...(leases.length ? ['leases:\n', ...leases] : []),
    `audit${s.auditDropped ? ` (${s.auditDropped} older entries dropped)` : ''}:\n`,
    ...audit,
  ].join('');
}
