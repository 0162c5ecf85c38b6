/**
 * `starry run` (submit and wait, printing each tick live), `starry submit` (return at once) and
 * `starry resubmit` (a task a halt cancelled before it started).
 */
import { Command, InvalidArgumentError as CommanderInvalidArgumentError, Option } from 'commander';
import type { AgentClient } from '../../client/agent-client';
import { ConfigError, type TaskConfig } from '../../core/config';
import { guideIds } from '../../core/guides';
import { LLM_SPEC_HELP } from '../../core/llm-spec';
import { isRequestError } from '../../core/errors';
import { traceparentSchema } from '../../core/payloads';
import { webUiLink } from '../../workflows/messages';
import { EXIT, ExitError, exitCodeFor, onInterrupt, sayErr, uiBase, withClient, workerIfNeeded } from '../common';
import { formatOutcome, jsonLine, say } from '../format';
import { printTask } from '../live';
import { loadAgentConfig, type ConfigFlags } from '../load-config';

/** What `starry run` does, as options (the demo runs it too). */
export interface RunOptions {
  goal: string | undefined;
  agent: string;
  /** The config flags; none at all sends the task to an existing agent with its own config. */
  flags: ConfigFlags;
  priority?: number;
  json?: boolean;
  worker: 'auto' | 'always' | 'never';
}

/** Register run, submit and resubmit. */
export function taskCommands(program: Command): void {
  const run = addTaskOptions(program.command('run').description('submit a task and wait for its result'));
  run.addOption(
    new Option(
      '--worker <mode>',
      "run a worker in this process: auto (when none polls and the server is this folder's own dev server: its build takes it over), always (on any server: it joins as a version of its build and changes no routing), never",
    )
      .choices(['auto', 'always', 'never'])
      .env('STARRY_RUN_WORKER')
      .default('auto'),
  );
  run.action(async (goal: string | undefined, _o, cmd: Command) => {
    const o = cmd.opts<{ agent: string; priority?: number; json?: boolean; worker: RunOptions['worker'] }>();
    process.exitCode = await runTask({
      goal,
      agent: o.agent,
      flags: configFlags(cmd),
      priority: o.priority,
      json: o.json,
      worker: o.worker,
    });
  });

  addTaskOptions(program.command('submit').description('submit a task and return at once')).action(
    async (goal: string | undefined, _o, cmd: Command) => {
      const o = cmd.opts<{ agent: string; priority?: number; json?: boolean }>();
      const g = requireGoal(goal);
      const flags = configFlags(cmd);
      // A bad config is a usage error before anything connects.
      const config = noConfigFlags(flags) ? undefined : loadAgentConfig(flags);
      await withClient(async (agents) => {
        const r = await submitWith(agents, o.agent, g, config, o.priority);
        say(
          o.json
            ? jsonLine({ agentId: o.agent, ...r })
            : `${r.taskId} queued for agent ${o.agent} at position ${r.position} (${r.workflowId})\n`,
        );
      }, 'required');
    },
  );

  program
    .command('resubmit')
    .description('submit again a task that a halt cancelled before it started (same id, goal, priority and config)')
    .argument('<agent>', 'agent id')
    .argument('<taskId>', 'the cancelled task (see `starry status`)')
    .option('--json', 'print one JSON object on stdout')
    .action(async (agentId: string, taskId: string, o: { json?: boolean }) => {
      await withClient(async (agents) => {
        const r = await agents.resubmit(agentId, taskId);
        say(
          o.json
            ? jsonLine({ agentId, ...r })
            : `${r.taskId} queued again for agent ${agentId} at position ${r.position} (${r.workflowId})\n`,
        );
      }, 'required');
    });
}

/**
 * Submit a task and wait for its result, printing each tick live (or one JSON line); Ctrl-C detaches.
 * Returns the exit code for the task's outcome.
 *
 * ```ts
 * process.exitCode = await runTask({ goal: 'hi', agent: 'a1', flags: { config: 'agent.json' }, worker: 'auto' });
 * ```
 */
export async function runTask(o: RunOptions): Promise<number> {
  const g = requireGoal(o.goal);
  const config = noConfigFlags(o.flags) ? undefined : loadAgentConfig(o.flags);
  return withClient(async (agents, connection) => {
    const embedded = await workerIfNeeded(connection, o.worker);
    try {
      // The embedded worker reads this process's environment: check its provider settings up front.
      const problem =
        embedded && config ? (await import('../../activities/llm')).llmSetupProblem(config.llm) : undefined;
      if (problem) throw new ConfigError(problem);
      const submitted = await submitWith(agents, o.agent, g, config, o.priority);
      if (!o.json) sayErr(`submitted ${submitted.taskId} to agent ${o.agent} (${submitted.workflowId})\n`);
      // Ctrl-C detaches at once: the task is a workflow and goes on without this process.
      const detach = onInterrupt(() => detachedHint(o.agent, submitted.taskId, submitted.workflowId, !!embedded));
      const live = new AbortController();
      try {
        const printing = o.json
          ? Promise.resolve()
          : printTask(agents.client, submitted.workflowId, { signal: live.signal }).catch(() => undefined);
        const result = await agents.waitForTask(o.agent, submitted.taskId);
        // The history's last events arrive with the result; give them a moment, never a hang.
        await Promise.race([printing, new Promise((r) => setTimeout(r, 2000))]);
        live.abort();
        if (o.json) say(jsonLine(result));
        else {
          say(`${formatOutcome(result)}\n`);
          say(`Web UI: ${webUiLink(uiBase(), result.workflowId)}\n`);
        }
        return exitCodeFor(result);
      } finally {
        live.abort();
        detach();
      }
    } finally {
      await embedded?.stop();
    }
  });
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function addTaskOptions(cmd: Command): Command {
  return cmd
    .argument('[goal]', 'what the agent should do')
    .option('--agent <id>', 'agent id (one long-lived workflow per agent)', 'default')
    .option('--llm <spec>', `the controller: ${LLM_SPEC_HELP}`)
    .option(
      '--workspace <dir>',
      "a workspace root the tools are confined to (repeatable; absolute, the tool workers' path, when Temporal is not on this machine)",
      collect,
    )
    .option(
      '--guide <id>',
      `how failures are explained to the LLM: ${guideIds().join(', ')}, or a guide the worker's plugins add`,
    )
    .option('--config <file>', 'agent config JSON (flags override it)')
    .addOption(new Option('--priority <n>', 'task priority, 1 (first) to 9').argParser(parsePriority))
    .option('--json', 'print one JSON object on stdout');
}

/** `--priority`: a whole number 1..9, checked before anything is started (0 is SYSTEM_HALT's). */
function parsePriority(v: string): number {
  if (!/^[1-9]$/.test(v.trim()))
    throw new CommanderInvalidArgumentError(
      `must be a whole number from 1 (first) to 9 (0 is reserved for SYSTEM_HALT); got "${v}"`,
    );
  return Number(v);
}

function configFlags(cmd: Command): ConfigFlags {
  const o = cmd.opts<{ config?: string; llm?: string; workspace?: string[]; guide?: string }>();
  return { config: o.config, llm: o.llm, workspace: o.workspace, guide: o.guide };
}

/** No config flag at all: the task goes to an existing agent and runs with the agent's own config. */
function noConfigFlags(f: ConfigFlags): boolean {
  return !f.config && !f.llm && !f.workspace?.length && !f.guide;
}

function requireGoal(goal: string | undefined): string {
  if (!goal || !goal.trim())
    throw new ExitError(
      'a goal is required, e.g. starry run "summarise notes.md" --llm scripted:turns.json',
      EXIT.USAGE,
    );
  return goal;
}

/** Submit to `agentId`: with a config (starting the agent when new), or, with none, to the agent as it is. */
async function submitWith(
  agents: AgentClient,
  agentId: string,
  goal: string,
  config: TaskConfig | undefined,
  priority?: number,
) {
  // A caller that traces (a CI job, a script run under otel-cli) passes its span as TRACEPARENT; a
  // malformed one is ignored, as W3C Trace Context says.
  const traceparent = process.env.TRACEPARENT;
  const extra = {
    ...(priority !== undefined ? { priority } : {}),
    ...(traceparent && traceparentSchema().safeParse(traceparent).success ? { traceparent } : {}),
  };
  if (config) return agents.submit(agentId, { goal, config, ...extra });
  try {
    return await agents.submitExisting(agentId, { goal, ...extra });
  } catch (err) {
    if (isRequestError(err) && err.type === 'NotFound') {
      throw new ExitError(
        `agent ${agentId} does not exist yet: give it a controller to start it (--llm scripted:FILE, gemini:MODEL, … or --config FILE)`,
        EXIT.USAGE,
      );
    }
    throw err;
  }
}

function detachedHint(agentId: string, taskId: string, workflowId: string, embedded: boolean): void {
  sayErr(
    [
      '',
      `detached from ${taskId} of agent ${agentId}; the task goes on${embedded ? ' as soon as a worker polls (this process was its only worker: run `starry dev` or `starry worker`)' : ''}.`,
      `  follow it:    starry watch ${agentId}`,
      `  halt it:      starry halt ${agentId}`,
      `  its log:      starry logs ${workflowId}`,
      `  if it locks:  starry unlock ${agentId} --resume`,
      '',
    ].join('\n'),
  );
}
