/**
 * `starry`: run, submit, watch, list, logs, halt, unlock, resubmit, replay; api, dev, worker. Exit codes
 * are the README's table: 0 completed · 1 failed (or unknown, or no worker) · 2 locked/stopped/refused ·
 * 64 usage · 130 detached.
 */
import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError as CommanderInvalidArgumentError, Option } from 'commander';
import type { Connection } from '@temporalio/client';
import { AgentClient } from '../client/agent-client';
import { ConfigError, type AgentConfig } from '../core/config';
import { isRequestError } from '../core/errors';
import { checkTenant, qualifiedAgentId } from '../core/tenant';
import { guideIds } from '../core/guides';
import { LLM_SPEC_HELP } from '../core/llm-spec';
import { agentWorkflowId, webUiLink } from '../workflows/messages';
import { isLocked, type TaskResult } from '../core/types';
import type { AgentList, AgentState } from '../core/contract';
import type { ChatMessage, TranscriptEntry } from '../core/llm';
import { connectClient, hasLiveWorker, TASK_QUEUE, temporalEnv } from '../client/connection';
import { projectRoot } from '../dev/paths';
// The native worker, the replayer, the dev server and the LLM providers are imported by the commands
// that use them (`await import`): every other command starts without loading them.
import type { EmbeddedWorker } from '../dev/embedded';
import { formatOutcome, formatStatus, jsonLine, reasonText, say } from './format';
import { printTask } from './live';
import type { Role } from '../api/auth';
import type { LocalApi } from '../api/serve';
import { loadAgentConfig, type ConfigFlags } from './load-config';

export const EXIT = { OK: 0, FAILED: 1, LOCKED: 2, USAGE: 64 } as const;

/** Text to stderr, escaped like all output (cli/format.ts `say`). */
const sayErr = (text: string) => say(text, process.stderr);

/** An error that carries the exit code the CLI should end with. */
class ExitError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** The exit code for a finished task (the README's exit-code table). */
export function exitCodeFor(r: TaskResult): number {
  if (r.outcome === 'COMPLETED') return EXIT.OK;
  if (r.outcome === 'FAILED' && !isLocked(r.agentState)) return EXIT.FAILED;
  return EXIT.LOCKED;
}

/** Where the Web UI of the server we talk to is (dev server: gRPC port + 1000). */
function uiBase(): string {
  if (process.env.STARRY_UI_URL) return process.env.STARRY_UI_URL.replace(/\/$/, '');
  const { address } = temporalEnv();
  const [host, port] = address.split(':');
  return `http://${host}:${Number(port ?? 7233) + 1000}`;
}

/** The tenant this run of the CLI acts in (`--tenant`, STARRY_TENANT), checked before any command runs. */
let tenant: string | undefined;

/**
 * Connect, and for commands that need an answer from the agent workflow (queries, updates), run a worker
 * here when none is polling: without one, a query has nobody to answer it. The client acts in `tenant`.
 */
async function withClient<T>(fn: (agents: AgentClient, connection: Connection) => Promise<T>, worker: 'auto' | 'never' | 'required' = 'never'): Promise<T> {
  const env = temporalEnv();
  const connection = await connectClient(env);
  if (worker === 'required' && !(await hasLiveWorker(connection, env))) {
    await connection.close();
    throw new ExitError(noWorker(env.address), EXIT.FAILED);
  }
  const embedded = await workerIfNeeded(connection, worker === 'required' ? 'never' : worker);
  try {
    return await fn(new AgentClient({ connection, namespace: env.namespace, taskQueue: TASK_QUEUE, ...(tenant !== undefined ? { tenant } : {}) }), connection);
  } finally {
    await embedded?.stop();
    await connection.close();
  }
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function configFlags(cmd: Command): ConfigFlags {
  const o = cmd.opts<{ config?: string; llm?: string; workspace?: string[]; guide?: string }>();
  return { config: o.config, llm: o.llm, workspace: o.workspace, guide: o.guide };
}

/** No config flag at all: the task goes to an existing agent and runs with the agent's own config. */
function noConfigFlags(f: ConfigFlags): boolean {
  return !f.config && !f.llm && !f.workspace?.length && !f.guide;
}

/** Submit to `agentId`: with a config (starting the agent when new), or, with none, to the agent as it is. */
async function submitWith(agents: AgentClient, agentId: string, goal: string, config: AgentConfig | undefined, priority?: number) {
  const extra = priority !== undefined ? { priority } : {};
  if (config) return agents.submit(agentId, { goal, config, ...extra });
  try {
    return await agents.submitExisting(agentId, { goal, ...extra });
  } catch (err) {
    if (isRequestError(err) && err.type === 'NotFound') {
      throw new ExitError(`agent ${agentId} does not exist yet: give it a controller to start it (--llm scripted:FILE, gemini:MODEL, … or --config FILE)`, EXIT.USAGE);
    }
    throw err;
  }
}

function addTaskOptions(cmd: Command): Command {
  return cmd
    .argument('[goal]', 'what the agent should do')
    .option('--agent <id>', 'agent id (one long-lived workflow per agent)', 'default')
    .option('--llm <spec>', `the controller: ${LLM_SPEC_HELP}`)
    .option('--workspace <dir>', 'a workspace root the tools are confined to (repeatable)', collect)
    .option('--guide <id>', `how failures are explained to the LLM: ${guideIds().join(', ')}`)
    .option('--config <file>', 'agent config JSON (flags override it)')
    .addOption(new Option('--priority <n>', 'task priority, 1 (first) to 9').argParser(parsePriority))
    .option('--json', 'print one JSON object on stdout');
}

/** `--priority`: a whole number 1..9, checked before anything is started (0 is SYSTEM_HALT's). */
function parsePriority(v: string): number {
  if (!/^[1-9]$/.test(v.trim())) throw new CommanderInvalidArgumentError(`must be a whole number from 1 (first) to 9 (0 is reserved for SYSTEM_HALT); got "${v}"`);
  return Number(v);
}

function requireGoal(goal: string | undefined): string {
  if (!goal || !goal.trim()) throw new ExitError('a goal is required, e.g. starry run "summarise notes.md" --llm scripted:turns.json', EXIT.USAGE);
  return goal;
}

/** `starry watch`: the agent's state when it changes, and each task it runs, live, until `signal`. */
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

/** Run `fn` on the first Ctrl-C (and exit 130); returns the function that removes the handler. */
function onInterrupt(fn: () => void): () => void {
  const handler = () => {
    fn();
    process.stderr.write('', () => process.exit(130));
  };
  process.once('SIGINT', handler);
  return () => process.off('SIGINT', handler);
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

function parsePort(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 65535) throw new CommanderInvalidArgumentError(`must be a port number 0..65535; got "${v}"`);
  return Number(v);
}

/** The HTTP API on loopback; `insecure` (no auth) says so loudly. */
async function startApi(port: number, insecure: boolean): Promise<LocalApi> {
  if (!insecure && !process.env.STARRY_API_JWT_SECRET && !process.env.STARRY_API_JWKS_URL) {
    throw new ExitError('the API needs authentication: set STARRY_API_JWT_SECRET (HS256) or STARRY_API_JWKS_URL, or pass --insecure-dev for a loopback-only dev API', EXIT.USAGE);
  }
  const { serveApi } = await import('../api/serve');
  const api = await serveApi({ port, insecureDev: insecure });
  if (insecure) sayErr(`WARNING: the HTTP API on ${api.url} runs WITHOUT AUTHENTICATION (--insecure-dev): every local caller is an admin. Loopback only; never expose it.\n`);
  return api;
}

/** Why a command that needs the agent's workflow to answer cannot run, and what to do. */
function noWorker(address: string): string {
  return `no worker is polling task queue ${TASK_QUEUE} on ${address}, and only a worker can answer an agent: start one with \`starry dev\` (local) or \`starry worker\`, then try again (\`starry run\` starts one itself)`;
}

/** Start a worker here unless one is already polling (so `starry run` works on its own). */
async function workerIfNeeded(connection: Connection, mode: 'auto' | 'always' | 'never'): Promise<EmbeddedWorker | undefined> {
  if (mode === 'never') return undefined;
  const env = temporalEnv();
  if (mode === 'auto' && (await hasLiveWorker(connection, env))) return undefined;
  return (await import('../dev/embedded')).startEmbeddedWorker(env);
}

async function runTask(goal: string | undefined, cmd: Command): Promise<number> {
  const o = cmd.opts<{ agent: string; priority?: number; json?: boolean; worker: 'auto' | 'always' | 'never' }>();
  const g = requireGoal(goal);
  const flags = configFlags(cmd);
  const config = noConfigFlags(flags) ? undefined : loadAgentConfig(flags);
  return withClient(async (agents, connection) => {
    const embedded = await workerIfNeeded(connection, o.worker);
    try {
      // The embedded worker reads this process's environment: check its provider settings up front.
      const problem = embedded && config ? (await import('../activities/llm')).llmSetupProblem(config.llm) : undefined;
      if (problem) throw new ConfigError(problem);
      const submitted = await submitWith(agents, o.agent, g, config, o.priority);
      if (!o.json) sayErr(`submitted ${submitted.taskId} to agent ${o.agent} (${submitted.workflowId})\n`);
      // Ctrl-C detaches at once: the task is a workflow and goes on without this process.
      const detach = onInterrupt(() => detachedHint(o.agent, submitted.taskId, submitted.workflowId, !!embedded));
      const live = new AbortController();
      try {
        const printing = o.json ? Promise.resolve() : printTask(agents.client, submitted.workflowId, { signal: live.signal }).catch(() => undefined);
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

async function main(argv: string[]): Promise<number> {
  const program = new Command('starry')
    .description('Durable, self-correcting AI agents on Temporal')
    .exitOverride()
    .configureOutput({ writeErr: (s) => sayErr(s) })
    .option('--tenant <id>', "act within this tenant: agent ids are the tenant's own (its agent x is acme:x inside), list shows its agents only (default: STARRY_TENANT; none: every agent, by its full id)", process.env.STARRY_TENANT || undefined)
    .hook('preAction', () => {
      const t = program.opts<{ tenant?: string }>().tenant;
      tenant = t === undefined ? undefined : checkTenant(t, '--tenant (or STARRY_TENANT)');
    });

  const run = addTaskOptions(program.command('run').description('submit a task and wait for its result'));
  run.addOption(new Option('--worker <mode>', 'run a worker in this process: auto (if none is polling), always, never').choices(['auto', 'always', 'never']).default('auto'));
  run.action(async (goal: string | undefined, _o, cmd: Command) => {
    process.exitCode = await runTask(goal, cmd);
  });

  addTaskOptions(program.command('submit').description('submit a task and return at once')).action(async (goal: string | undefined, _o, cmd: Command) => {
    const o = cmd.opts<{ agent: string; priority?: number; json?: boolean }>();
    const g = requireGoal(goal);
    const flags = configFlags(cmd);
    // A bad config is a usage error before anything connects.
    const config = noConfigFlags(flags) ? undefined : loadAgentConfig(flags);
    await withClient(async (agents) => {
      const r = await submitWith(agents, o.agent, g, config, o.priority);
      say(o.json ? jsonLine({ agentId: o.agent, ...r }) : `${r.taskId} queued for agent ${o.agent} at position ${r.position} (${r.workflowId})\n`);
    }, 'required');
  });

  program
    .command('resubmit')
    .description('submit again a task that a halt cancelled before it started (same id, goal, priority and config)')
    .argument('<agent>', 'agent id')
    .argument('<taskId>', 'the cancelled task (see `starry status`)')
    .option('--json', 'print one JSON object on stdout')
    .action(async (agentId: string, taskId: string, o: { json?: boolean }) => {
      await withClient(async (agents) => {
        const r = await agents.resubmit(agentId, taskId);
        say(o.json ? jsonLine({ agentId, ...r }) : `${r.taskId} queued again for agent ${agentId} at position ${r.position} (${r.workflowId})\n`);
      }, 'required');
    });

  program
    .command('status')
    .description("show an agent's state, queue, counters and recent tasks")
    .argument('<agent>', 'agent id')
    .option('--json', 'print the state query as JSON')
    .action(async (agentId: string, o: { json?: boolean }) => {
      await withClient(async (agents, connection) => {
        if (!(await hasLiveWorker(connection, temporalEnv()))) {
          // Never a worker here just to answer: it would advance the agent's tasks while we read.
          const seen = await agents.visibleState(agentId);
          if (o.json) throw new ExitError(noWorker(temporalEnv().address), EXIT.FAILED);
          say(`agent ${agentId}: ${seen.agentState ?? 'state unknown'}${seen.lockReason ? ` (${seen.lockReason})` : ''} · ${seen.tokensUsed ?? 0} tokens — from the visibility store\n`);
          sayErr(`starry: ${noWorker(temporalEnv().address)}\n`);
          return;
        }
        const s = await agents.status(agentId);
        say(o.json ? jsonLine(s) : `${formatStatus(s)}\nWeb UI: ${webUiLink(uiBase(), agents.agentWorkflowId(agentId))}\n`);
      });
    });

  program
    .command('list')
    .description('running agents and their state, from the visibility store (needs no worker)')
    .addOption(new Option('--state <state>', 'only agents in this state').choices(['WAITING_FOR_EVENT', 'EXECUTING', 'SAFETY_LOCKOUT', 'ERROR_PAUSED', 'STOPPED']))
    .option('--json', 'print {agents, nextPageToken?} as JSON')
    .action(async (o: { state?: AgentState; json?: boolean }) => {
      await withClient(async (agents) => {
        const all: AgentList['agents'] = [];
        let token: string | undefined;
        do {
          const page = await agents.listAgents({ ...(o.state ? { state: o.state } : {}), pageSize: 200, ...(token ? { nextPageToken: token } : {}) });
          all.push(...page.agents);
          token = page.nextPageToken;
        } while (token);
        all.sort((a, b) => a.agentId.localeCompare(b.agentId));
        if (o.json) return void say(jsonLine({ agents: all }));
        if (!all.length) return void say(`no running agent${o.state ? ` in ${o.state}` : ''}\n`);
        const width = Math.max(...all.map((a) => a.agentId.length), 5);
        for (const a of all) say(`${a.agentId.padEnd(width)}  ${(a.agentState ?? '?').padEnd(17)}  ${a.lockReason ?? ''}${a.tokensUsed !== undefined ? `  ${a.tokensUsed} tokens` : ''}\n`.replace(/\s+\n$/, '\n'));
      });
    });

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

  program
    .command('logs')
    .description("a task's log from its workflow history: each tick's model text, tool calls and results, pain, signals")
    .argument('<workflowId>', 'the task workflow, e.g. agent-a1-task-3 (printed by run, submit and status)')
    .option('--json', 'print the task result JSON instead')
    .option('--transcript', 'print the whole transcript instead: every message the model saw and said, read from the transcript store')
    .action(async (workflowId: string, o: { json?: boolean; transcript?: boolean }) => {
      await withClient(async (agents) => {
        const result = await agents.taskResult(workflowId);
        if (o.transcript) {
          say(await transcriptText(workflowId, result));
          return;
        }
        if (o.json) {
          if (!result) throw new ExitError(`task ${workflowId} is still running: \`starry logs\` without --json shows it so far`, EXIT.FAILED);
          say(jsonLine(result));
          return;
        }
        await printTask(agents.client, workflowId, { live: false });
        say(result ? `${formatOutcome(result)}\n` : `(still running: \`starry watch\` follows it live)\n`);
      });
    });

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
          say(`SYSTEM_HALT recorded for agent ${agentId}: no worker is polling, so nothing of it runs now; it is STOPPED the moment a worker picks it up\n`);
          return;
        }
        const s = await agents.status(agentId);
        say(`SYSTEM_HALT sent: agent ${agentId} is ${s.agentState}; ${s.cancelledTasks.length} queued task(s) recorded as cancelled\n`);
      });
    });

  program
    .command('unlock')
    .description('admin:unlock: leave SAFETY_LOCKOUT / ERROR_PAUSED / STOPPED')
    .argument('<agent>', 'agent id')
    .option('--resume', 'continue the suspended task with a fresh tick allowance (default: abort it)')
    .addOption(new Option('--add-tokens <n>', 'raise the token budget by N').argParser((v) => Number(v)))
    .option('--note <text>', 'why (kept in the agent state and history)')
    .option('--by <name>', 'who is unlocking', process.env.USER ?? 'operator')
    .option('--json', 'print the result as JSON')
    .action(async (agentId: string, o: { resume?: boolean; addTokens?: number; note?: string; by: string; json?: boolean }) => {
      if (o.addTokens !== undefined && (!Number.isInteger(o.addTokens) || o.addTokens < 0)) {
        throw new ExitError(`--add-tokens must be a whole number >= 0, got ${o.addTokens}`, EXIT.USAGE);
      }
      await withClient(async (agents) => {
        const r = await agents.unlock(agentId, { resume: !!o.resume, by: o.by, ...(o.addTokens ? { addTokens: o.addTokens } : {}), ...(o.note ? { note: o.note } : {}) });
        say(o.json ? jsonLine(r) : `${r.message}\n`);
      }, 'required');
    });

  program
    .command('message')
    .description('send a human follow-up to the running task (appended before its next LLM call)')
    .argument('<agent>', 'agent id')
    .argument('<text>', 'the message')
    .option('--by <name>', 'who is writing', process.env.USER ?? 'operator')
    .action(async (agentId: string, text: string, o: { by: string }) => {
      await withClient(async (agents) => {
        const r = await agents.message(agentId, text, o.by);
        say(r.delivered === 'running task' ? `message given to ${agentId}'s running task ${r.taskId}\n` : `message kept for ${agentId}'s next task (no task is running)\n`);
      }, 'required');
    });

  program
    .command('replay')
    .description('replay a workflow history against the current code; names the first non-deterministic event')
    .argument('[workflowId]', 'a workflow on the server')
    .option('--file <history.json>', 'a history JSON file instead')
    .option('--json', 'print the report as JSON')
    .action(async (workflowId: string | undefined, o: { file?: string; json?: boolean }) => {
      if (!workflowId && !o.file) throw new ExitError('give a WORKFLOW_ID or --file HISTORY.json', EXIT.USAGE);
      // The report says what failed; the replayer's own warning about it would only repeat it.
      const { fetchHistory, loadHistoryFile, replayHistory } = await import('../dev/replay');
      (await import('../dev/embedded')).quietRuntime('ERROR');
      const report = o.file
        ? await replayHistory(loadHistoryFile(path.resolve(o.file)), path.basename(o.file, '.json'))
        : await withClient(async (agents) => replayHistory(await fetchHistory(agents.client, workflowId as string), workflowId));
      if (o.json) say(jsonLine(report));
      else if (report.ok) say(`replay ok: ${report.workflowId} (${report.workflowType ?? '?'}, ${report.events} events) is deterministic with the current code\n`);
      else {
        say(`replay FAILED: ${report.workflowId}\n`);
        if (report.firstBadEvent) say(`first non-deterministic event: #${report.firstBadEvent.eventId} ${report.firstBadEvent.eventType}\n`);
        say(`${report.error}\n`);
      }
      if (!report.ok) process.exitCode = EXIT.FAILED;
    });

  program
    .command('worker')
    .description('run a worker (its environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, STARRY_WORKER_POLICY, … — docs/ARCHITECTURE.md#the-worker)')
    .option('--set-current', "make this worker's version the current one once it polls (STARRY_MAKE_CURRENT=always; docs/ARCHITECTURE.md#versioning)")
    .action(async (o: { setCurrent?: boolean }) => {
      if (o.setCurrent) process.env.STARRY_MAKE_CURRENT = 'always';
      // runWorker installs the worker's logger: every failure as one line, pain included.
      await (await import('../worker/main')).runWorker();
    });

  program
    .command('api')
    .description('serve the HTTP API on 127.0.0.1 (auth from STARRY_API_JWT_SECRET or STARRY_API_JWKS_URL; see docs/API.md)')
    .option('--port <n>', 'port', parsePort, 8080)
    .option('--insecure-dev', 'no authentication: every caller is an admin (loopback only; never in production)')
    .action(async (o: { port: number; insecureDev?: boolean }) => {
      const api = await startApi(o.port, !!o.insecureDev);
      sayErr(`HTTP API on ${api.url} (OpenAPI: ${api.url}/openapi.json) against Temporal at ${temporalEnv().address}; Ctrl-C stops it\n`);
      await untilSignal();
      await api.close();
    });

  program
    .command('api-token')
    .description('mint a bearer token for the HTTP API, signed with STARRY_API_JWT_SECRET (for local use and tests); with --tenant, for that tenant (its claim: STARRY_API_TENANT_CLAIM, default "tenant")')
    .requiredOption('--role <role>', 'viewer | operator | admin')
    .option('--sub <name>', 'who the token is for (recorded as `by` of halts and unlocks)', process.env.USER ?? 'operator')
    .option('--ttl <seconds>', 'lifetime in seconds', (v) => Number(v), 3600)
    .action(async (o: { role: string; sub: string; ttl: number }) => {
      const secret = process.env.STARRY_API_JWT_SECRET;
      if (!secret) throw new ExitError('set STARRY_API_JWT_SECRET (at least 32 characters) to the secret the API checks tokens with', EXIT.USAGE);
      if (!['viewer', 'operator', 'admin'].includes(o.role)) throw new ExitError(`--role must be viewer, operator or admin, got "${o.role}"`, EXIT.USAGE);
      if (!Number.isInteger(o.ttl) || o.ttl <= 0) throw new ExitError('--ttl must be a whole number of seconds > 0', EXIT.USAGE);
      // Loaded on use: the API's modules (jose is ESM-only) stay out of every other command's start.
      const { devToken } = await import('../api/auth');
      const token = await devToken({
        secret,
        sub: o.sub,
        roles: [o.role as Role],
        ttlSeconds: o.ttl,
        ...(process.env.STARRY_API_ISSUER ? { issuer: process.env.STARRY_API_ISSUER } : {}),
        ...(process.env.STARRY_API_AUDIENCE ? { audience: process.env.STARRY_API_AUDIENCE } : {}),
        ...(tenant !== undefined ? { claims: { [process.env.STARRY_API_TENANT_CLAIM || 'tenant']: tenant } } : {}),
      });
      say(`${token}\n`);
    });

  program
    .command('dev')
    .description('the embedded default: a local Temporal dev server (SQLite, Web UI) plus a worker, in the foreground')
    .option('--port <n>', 'gRPC port', (v) => Number(v), 7233)
    .option('--db <file>', 'SQLite file (default .temporal/dev.db)')
    .option('--api-port <n>', 'port of the HTTP API beside the worker (0: none)', parsePort, 8080)
    .action(async (o: { port: number; db?: string; apiPort: number }) => {
      const { startDevServer } = await import('../dev/dev-server');
      const server = await startDevServer({ port: o.port, ...(o.db ? { dbFile: path.resolve(o.db) } : {}) });
      process.env.TEMPORAL_ADDRESS = server.address;
      const w = await (await import('../dev/embedded')).startEmbeddedWorker(temporalEnv());
      // The API comes up beside the worker; with no auth configured it is the loopback-only dev mode.
      const secured = !!(process.env.STARRY_API_JWT_SECRET || process.env.STARRY_API_JWKS_URL);
      const api = o.apiPort ? await startApi(o.apiPort, !secured).catch((err: Error) => void sayErr(`starry: the HTTP API did not start: ${err.message}\n`)) : undefined;
      sayErr(
        `${server.started ? 'started' : 'using the running'} Temporal dev server at ${server.address}\nWeb UI: ${server.uiUrl}\n${api ? `HTTP API: ${api.url}\n` : ''}worker running on task queue ${TASK_QUEUE}; Ctrl-C stops ${server.started ? 'all' : 'the worker and the API'}\n`,
      );
      await untilSignal();
      sayErr(`stopping the worker${server.started ? ' and the dev server' : ''}…\n`);
      await api?.close();
      await w.stop();
      await server.stop();
      sayErr(`stopped${server.started ? ` (agents are kept in ${server.dbFile ?? 'the SQLite file'})` : ''}\n`);
    });

  program
    .command('demo')
    .description("the seeds' EPERM scenario with a scripted controller, on the embedded dev server")
    .option('--json', 'print the result JSON instead of the transcript')
    .action(async (o: { json?: boolean }) => {
      const root = projectRoot();
      sayErr('starting the Temporal dev server (SQLite in .temporal/, kept running for the Web UI)…\n');
      const server = await (await import('../dev/dev-server')).startDevServer({ port: 7233, detached: true });
      process.env.TEMPORAL_ADDRESS = server.address;
      process.env.STARRY_UI_URL = server.uiUrl;
      const agentId = `demo-${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}`;
      const args = ['run', 'Tell me what /root/secret.txt says.', '--agent', agentId, '--config', path.join(root, 'examples/eperm/agent.json'), '--worker', 'always'];
      if (o.json) args.push('--json');
      else sayErr(`agent ${agentId}: fs.read /root/secret.txt is outside its workspace; watch the pain and the correction\n\n`);
      process.exitCode = await main(args);
      if (!o.json) {
        say(`\nAgent workflow: ${webUiLink(server.uiUrl, agentWorkflowId(qualifiedAgentId(tenant, agentId)))}\n`);
        say(`All workflows:  ${webUiLink(server.uiUrl)}\n`);
        say(`The dev server keeps running for the Web UI; \`npm run stop\` stops it.\n`);
      }
    });

  program
    .command('server')
    .description('the local dev server: `starry server start` (in the background) or `starry server stop`')
    .argument('<action>', 'start | stop')
    .option('--port <n>', 'gRPC port', (v) => Number(v), 7233)
    .action(async (action: string, o: { port: number }) => {
      // The dev server's module is loaded only by the commands that start one: the others start faster.
      const { startDevServer, stopDevServer } = await import('../dev/dev-server');
      if (action === 'start') {
        const s = await startDevServer({ port: o.port, detached: true });
        say(`${s.started ? 'started' : 'already running'}: ${s.address} · Web UI ${s.uiUrl}\n`);
      } else if (action === 'stop') {
        const stopped = await stopDevServer(o.port);
        say(stopped ? `stopped the dev server on port ${o.port}\n` : `no dev server started by starry on port ${o.port}\n`);
      } else throw new ExitError(`unknown action "${action}": use start or stop`, EXIT.USAGE);
    });

  try {
    await program.parseAsync(argv, { from: 'user' });
    return Number(process.exitCode ?? EXIT.OK);
  } catch (err) {
    return report(err);
  }
}

function report(err: unknown): number {
  if (err instanceof CommanderError) {
    // Help and version are not errors; commander already printed them.
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0) return EXIT.OK;
    return EXIT.USAGE;
  }
  if (err instanceof ExitError) {
    sayErr(`starry: ${err.message}\n`);
    return err.code;
  }
  if (isRequestError(err)) {
    // Typed, never read from the message: a bad request is a usage error, a refusal means the agent is locked.
    sayErr(`starry: ${err.message}\n`);
    return err.type === 'InvalidArgument' ? EXIT.USAGE : err.type === 'Refused' ? EXIT.LOCKED : EXIT.FAILED;
  }
  sayErr(`starry: ${err instanceof Error ? err.message : String(err)}\n`);
  return EXIT.FAILED;
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

export { main };

/**
 * A finished task's whole transcript, resolved through the transcript store this process's environment
 * names (the worker's: STARRY_STORE_BUCKET or STARRY_STORE_DIR). A missing blob is an error naming it.
 */
async function transcriptText(workflowId: string, result: TaskResult | undefined): Promise<string> {
  if (!result) throw new ExitError(`task ${workflowId} is still running: its transcript is complete once it ends (\`starry watch\` follows it live)`, EXIT.FAILED);
  if (!result.transcript?.manifest) throw new ExitError(`task ${workflowId} has no stored transcript (it ran before the transcript store, or made no LLM call): \`starry logs ${workflowId}\` shows its ticks`, EXIT.FAILED);
  const [{ storeFromEnv, BlobMissingError }, { transcriptStore }] = await Promise.all([import('../activities/store'), import('../activities/transcript')]);
  let messages;
  try {
    messages = await transcriptStore(storeFromEnv()).transcript(result.transcript.manifest, result.transcript.tail as TranscriptEntry[]);
  } catch (err) {
    if (err instanceof BlobMissingError) throw new ExitError(err.message, EXIT.FAILED);
    throw err;
  }
  return messages.map(messageText).join('\n');
}

/** One transcript message as text: who, what they said, the calls the model asked for. */
function messageText(m: ChatMessage): string {
  const head = m.role === 'tool' ? `[tool ${m.name}]` : `[${m.role}]`;
  const calls = m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => `  → ${c.name} ${JSON.stringify(c.args ?? c.rawArguments ?? {})}`) : [];
  return [head, ...('text' in m && m.text ? [m.text] : []), ...calls, ''].join('\n');
}
