/**
 * `starry watch`: follow an agent live, task after task, until Ctrl-C. A server that stops answering is
 * said at once, tried again for a while (`--reconnect-for`), and then given up with a clear message.
 */
import { Command, InvalidArgumentError as CommanderInvalidArgumentError } from 'commander';
import type { Connection } from '@temporalio/client';
import type { AgentClient } from '../../client/agent-client';
import { temporalEnv } from '../../client/connection';
import { EXIT, ExitError, sayErr, withClient } from '../common';
import { formatOutcome, reasonText, say } from '../format';
import { printTask } from '../live';

/** Register watch. */
export function watchCommand(program: Command): void {
  program
    .command('watch')
    .description('follow an agent live, task after task (each tick, tool call, pain, alert), until Ctrl-C')
    .argument('<agent>', 'agent id')
    .option(
      '--reconnect-for <seconds>',
      'when the server stops answering, how long to keep trying to reach it before giving up',
      parseSeconds,
      60,
    )
    .action(async (agentId: string, o: { reconnectFor: number }) => {
      await withClient(async (agents, connection) => {
        const stop = new AbortController();
        process.once('SIGINT', () => stop.abort());
        const link = new ServerLink(connection, temporalEnv().address, o.reconnectFor, stop.signal);
        try {
          // Whichever ends first: the watch (Ctrl-C), or the server gone for longer than the retry window.
          await Promise.race([watchAgent(agents, agentId, stop.signal, link), link.gone(agentId)]);
        } finally {
          stop.abort();
        }
      }, 'required');
    });
}

/** `--reconnect-for`: whole seconds, 0 or more. */
function parseSeconds(v: string): number {
  if (!/^\d+$/.test(v)) throw new CommanderInvalidArgumentError(`must be a whole number of seconds; got "${v}"`);
  return Number(v);
}

/** The agent's state when it changes, and each task it runs, live, until `signal`. */
async function watchAgent(agents: AgentClient, agentId: string, signal: AbortSignal, link: ServerLink): Promise<void> {
  let head = '';
  let followed: string | undefined;
  // Tasks already finished when watching began are history; any later one is shown, even one that ran
  // entirely between two polls.
  let shown = new Set((await agents.status(agentId)).tasks.map((t) => `${t.workflowId}:${t.outcome}`));
  while (!signal.aborted) {
    const losses = link.losses;
    try {
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
      for (const done of s.tasks.filter(
        (t) => !shown.has(`${t.workflowId}:${t.outcome}`) && t.workflowId !== cur?.workflowId,
      )) {
        if (done.workflowId !== followed) {
          say(`▶ ${done.taskId} (${done.workflowId})\n`);
          await printTask(agents.client, done.workflowId, { signal, live: false });
        }
        say(`◀ ${formatOutcome(done)}\n`);
        if (done.workflowId === followed) followed = undefined;
      }
      shown = new Set(s.tasks.map((t) => `${t.workflowId}:${t.outcome}`));
    } catch (err) {
      if (signal.aborted) return;
      // Only a lost server is waited out; any other error ends the watch as before.
      if (link.losses === losses && !link.lost && !unavailable(err)) throw err;
      await link.back();
      // What was printed of the running task is followed again from its start.
      followed = undefined;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** gRPC's UNAVAILABLE anywhere in the error's causes: the server does not answer. */
function unavailable(err: unknown): boolean {
  for (let e = err as { code?: number; cause?: unknown } | undefined; e; e = e.cause as typeof e)
    if (e.code === 14) return true;
  return false;
}

/**
 * Whether the server answers, asked every second (a cheap `GetSystemInfo`, 2 s to answer): a loss and a
 * return are said on stderr the moment they are seen, and a loss longer than `retrySeconds` ends it.
 */
class ServerLink {
  /** How many times the server was lost so far. */
  losses = 0;
  lost = false;
  private lostAt = 0;
  private readonly waiting: Array<() => void> = [];
  private giveUp?: () => void;

  constructor(
    private readonly connection: Connection,
    private readonly address: string,
    private readonly retrySeconds: number,
    private readonly signal: AbortSignal,
  ) {
    void this.run();
  }

  /** Rejects with the exit error once the server has been lost for longer than the retry window. */
  gone(agentId: string): Promise<never> {
    return new Promise((_, reject) => {
      this.giveUp = () =>
        reject(
          new ExitError(
            `the Temporal server at ${this.address} has not answered for ${this.retrySeconds} s, so this stopped watching agent ${agentId}: start it again (\`starry dev\`, or \`starry server start\` for the local one) and run \`starry watch ${agentId}\` again`,
            EXIT.FAILED,
          ),
        );
    });
  }

  /** Resolves when the server answers again (at once when it does now), or the watch is stopped. */
  back(): Promise<void> {
    if (!this.lost || this.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private async answers(): Promise<boolean> {
    try {
      await this.connection.withDeadline(Date.now() + 2000, () => this.connection.workflowService.getSystemInfo({}));
      return true;
    } catch {
      return false;
    }
  }

  private async run(): Promise<void> {
    while (!this.signal.aborted) {
      const ok = await this.answers();
      if (this.signal.aborted) break;
      if (!ok && !this.lost) {
        this.lost = true;
        this.losses++;
        this.lostAt = Date.now();
        sayErr(
          `starry: lost the Temporal server at ${this.address}: it does not answer; trying to reach it again for ${this.retrySeconds} s (Ctrl-C stops)\n`,
        );
      } else if (ok && this.lost) {
        this.lost = false;
        sayErr(`starry: the Temporal server at ${this.address} answers again; watching on\n`);
        this.release();
      }
      if (this.lost && Date.now() - this.lostAt >= this.retrySeconds * 1000) {
        this.giveUp?.();
        break;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
    this.release();
  }

  private release(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}
