/**
 * The local dev server: `starry dev` (server, worker and API in the foreground), `starry demo` (the
 * EPERM scenario on it) and `starry server start|stop` (in the background). The dev server's module is
 * loaded only by these commands: the others start faster.
 */
import path from 'node:path';
import type { Command } from 'commander';
import type { DevServer } from '../../dev/dev-server';
import { TASK_QUEUE, temporalEnv } from '../../client/connection';
import { qualifiedAgentId } from '../../core/tenant';
import { projectRoot, stateDir } from '../../dev/paths';
import { workerConfigFromEnv } from '../../workers/env';
import { TRACE_VIEWER_PORT, type TraceViewer } from '../../dev/trace-viewer';
import { agentWorkflowId, webUiLink } from '../../workflows/messages';
import { actingTenant, EXIT, ExitError, parsePort, sayErr, untilSignal } from '../common';
import { say } from '../format';
import { runTask } from './task';
import { startApi } from './serve';
import { checkApiPort } from '../api-port';

/** Register dev, demo and server. */
export function devCommands(program: Command): void {
  program
    .command('dev')
    .description('the embedded default: a local Temporal dev server (SQLite, Web UI) plus a worker, in the foreground')
    .option('--port <n>', 'gRPC port (the Web UI is on port + 1000)', parsePort, 7233)
    .option('--db <file>', 'SQLite file (default .temporal/dev.db)')
    .option('--api-port <n>', 'port of the HTTP API beside the worker (0: none)', parsePort, 8080)
    .option('--otel', "trace the worker's tasks to a trace viewer served here, and its metrics to Prometheus on :9464")
    .option('--otel-port <n>', 'port of the trace viewer (0: any free port)', parsePort, TRACE_VIEWER_PORT)
    .option(
      '--tool-worker',
      `tools on a task queue of their own (STARRY_TOOL_TASK_QUEUE, default ${TASK_QUEUE}-tools) served by a tool worker process without the LLM keys; on whenever STARRY_TOOL_TASK_QUEUE is set`,
    )
    .action(runDev);

  program
    .command('demo')
    .description("the seeds' EPERM scenario with a scripted controller, on the embedded dev server")
    .option('--port <n>', 'gRPC port of the dev server (the Web UI is on port + 1000)', parsePort, 7233)
    .option('--json', 'print the result JSON instead of the transcript')
    .action(runDemo);

  program
    .command('server')
    .description('the local dev server: `starry server start` (in the background) or `starry server stop`')
    .argument('<action>', 'start | stop')
    .option('--port <n>', 'gRPC port (the Web UI is on port + 1000)', parsePort, 7233)
    .action(serverAction);
}

/** `starry dev`: the dev server, the worker (and a tool worker), the API and the trace viewer until Ctrl-C. */
async function runDev(o: DevOptions): Promise<void> {
  // A taken API port stops the command before anything starts (cli/api-port.ts).
  if (o.apiPort) await checkApiPort(o.apiPort, '--api-port');
  // What started, stopped in reverse order on Ctrl-C or when a later part fails to start.
  const started: Array<() => Promise<unknown>> = [];
  const stopAll = async () => {
    for (const stop of started.splice(0).reverse()) await stop();
  };
  try {
    const stack = await startDevStack(o, started);
    sayErr(stack.banner);
    await untilSignal();
    sayErr(`stopping the worker${stack.server.started ? ' and the dev server' : ''}…\n`);
    await stopAll();
    sayErr(
      `stopped${stack.server.started ? ` (agents are kept in ${stack.server.dbFile ?? 'the SQLite file'})` : ''}\n`,
    );
  } catch (err) {
    await stopAll();
    throw err;
  }
}

interface DevOptions {
  port: number;
  db?: string;
  apiPort: number;
  otel?: boolean;
  otelPort: number;
  toolWorker?: boolean;
}

/** Start what `starry dev` runs, pushing each part's stop onto `started`; returns the banner to print. */
async function startDevStack(
  o: DevOptions,
  started: Array<() => Promise<unknown>>,
): Promise<{ server: DevServer; banner: string }> {
  // Before the worker reads its environment: its exporter points at the viewer.
  const otel = o.otel ? await startOtel(o.otelPort) : undefined;
  if (otel) started.push(() => Promise.all([otel.viewer.close(), otel.close()]));
  const { startDevServer } = await import('../../dev/dev-server');
  const server = await startDevServer({ port: o.port, ...(o.db ? { dbFile: path.resolve(o.db) } : {}) });
  started.push(() => server.stop());
  await refuseStranger(server, 'dev');
  process.env.TEMPORAL_ADDRESS = server.address;
  if (o.toolWorker) process.env.STARRY_TOOL_TASK_QUEUE ||= `${TASK_QUEUE}-tools`;
  const toolQueue = process.env.STARRY_TOOL_TASK_QUEUE;
  const tools =
    toolQueue && toolQueue !== TASK_QUEUE
      ? await (await import('../../dev/tool-worker')).startToolWorkerProcess()
      : undefined;
  if (tools) started.push(() => tools.stop());
  // This folder's own server: the build that runs now takes its agents over (dev/embedded.ts).
  const w = await (
    await import('../../dev/embedded')
  ).startEmbeddedWorker(temporalEnv(), TASK_QUEUE, {
    versioning: { makeCurrent: 'take-over' },
  });
  started.push(() => w.stop());
  // The API comes up beside the worker; with no auth configured it is the loopback-only dev mode.
  const secured = !!(process.env.STARRY_API_JWT_SECRET || process.env.STARRY_API_JWKS_URL);
  const api = o.apiPort ? await startApi(o.apiPort, !secured, '--api-port') : undefined;
  if (api) started.push(() => api.close());
  const banner = `${serverLine(server)}\nWeb UI: ${server.uiUrl}\n${api ? `HTTP API: ${api.url}\n` : ''}${otel ? `${otel.line}\n` : ''}${rootsLine()}\nworker running on task queue ${TASK_QUEUE}${tools ? `, a tool worker (pid ${tools.child.pid}, no LLM key) on ${toolQueue}` : ''}; Ctrl-C stops ${server.started ? 'all' : 'the worker and the API'}\n`;
  return { server, banner };
}

/** `starry demo`: the EPERM scenario on the dev server (started in the background if needed), and where to see it. */
async function runDemo(o: { port: number; json?: boolean }): Promise<void> {
  const root = projectRoot();
  const { isListening, startDevServer } = await import('../../dev/dev-server');
  if (!(await isListening(o.port)))
    sayErr(
      `starting a Temporal dev server on 127.0.0.1:${o.port} (SQLite in ${shown(stateDir())}/, kept running for the Web UI on port ${o.port + 1000})…\n`,
    );
  const server = await startDevServer({ port: o.port, detached: true });
  await refuseStranger(server, 'demo');
  if (!server.started) sayErr(`${serverLine(server)}\n`);
  process.env.TEMPORAL_ADDRESS = server.address;
  process.env.STARRY_UI_URL = server.uiUrl;
  const agentId = `demo-${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}`;
  if (!o.json)
    sayErr(
      `agent ${agentId}: fs.read /root/secret.txt is outside its workspace; watch the pain and the correction\n\n`,
    );
  const config = path.join(root, 'examples/eperm/agent.json');
  process.exitCode = await runTask({
    goal: 'Tell me what /root/secret.txt says.',
    agent: agentId,
    flags: { config },
    json: o.json,
    worker: 'always',
  });
  if (!o.json) {
    say(`\nAgent workflow: ${webUiLink(server.uiUrl, agentWorkflowId(qualifiedAgentId(actingTenant(), agentId)))}\n`);
    say(`All workflows:  ${webUiLink(server.uiUrl)}\n`);
    if (server.dbFile)
      say(
        `The dev server keeps running for the Web UI; \`npm run stop${o.port === 7233 ? '' : ` -- --port ${o.port}`}\` stops it.\n`,
      );
  }
}

/** `starry server start|stop`: the dev server in the background. */
async function serverAction(action: string, o: { port: number }): Promise<void> {
  const { startDevServer, stopDevServer } = await import('../../dev/dev-server');
  if (action === 'start') {
    const s = await startDevServer({ port: o.port, detached: true });
    say(
      s.started || s.dbFile
        ? `${s.started ? 'started' : 'already running'}: ${s.address} · Web UI ${s.uiUrl}\n`
        : `${serverLine(s)}\n`,
    );
  } else if (action === 'stop') {
    const stopped = await stopDevServer(o.port);
    say(stopped ? `stopped the dev server on port ${o.port}\n` : `no dev server started by starry on port ${o.port}\n`);
  } else throw new ExitError(`unknown action "${action}": use start or stop`, EXIT.USAGE);
}

/**
 * `starry dev --otel`: the trace viewer on loopback, and the worker's OTEL_* pointing at it (traces,
 * exported every 500 ms so a task's trace shows soon after it ends) and at a Prometheus endpoint
 * (metrics). A line per finished task gives its trace's page. Variables the person set stay theirs,
 * except the traces endpoint and its protocol (the viewer speaks OTLP/HTTP), which are the point of the flag.
 */
async function startOtel(port: number): Promise<{ viewer: TraceViewer; line: string; close: () => Promise<void> }> {
  const { startTraceViewer } = await import('../../dev/trace-viewer');
  const { metricsConfigFromEnv, tracingConfigFromEnv } = await import('../../workers/otel-env');
  const env = process.env;
  env.OTEL_BSP_SCHEDULE_DELAY ??= '500';
  env.OTEL_METRICS_EXPORTER ??= 'prometheus';
  env.OTEL_EXPORTER_PROMETHEUS_HOST ??= '127.0.0.1';
  const viewerEnv = { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' } as const;
  const probe = tracingConfigFromEnv({
    ...env,
    ...viewerEnv,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1/v1/traces',
  });
  if (probe?.exporter !== 'otlp')
    throw new ExitError(
      "--otel sends the worker's traces to its viewer, but this environment turns them off or sends them to the console (OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none|console, an always_off sampler): unset it",
      EXIT.USAGE,
    );
  // The state of a task whose spans have not all come (a wait for a human shows as such), from the dev server.
  const { taskStateLookup } = await import('../../dev/task-state');
  const states = taskStateLookup(temporalEnv);
  const viewer = await startTraceViewer({
    port,
    taskState: states.taskState,
    onSpans: (spans) => {
      for (const s of spans)
        if (s.name === 'invoke_agent' && s.attributes['starry.task.outcome'] !== undefined)
          sayErr(
            `trace of ${String(s.attributes['temporal.workflow.id'])} (${String(s.attributes['starry.task.outcome'])}): ${viewer.traceUrl(s.traceId)}\n`,
          );
    },
  }).catch((err: Error) => {
    throw new ExitError(err.message, EXIT.FAILED);
  });
  Object.assign(env, viewerEnv, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${viewer.url}/v1/traces` });
  // Where the worker will serve its metrics, as the worker reads the same variables (its defaults included).
  const scrape = metricsConfigFromEnv(env);
  const metrics =
    scrape?.exporter === 'prometheus'
      ? `http://${scrape.prometheus.host}:${scrape.prometheus.port}/metrics`
      : `OTEL_METRICS_EXPORTER=${env.OTEL_METRICS_EXPORTER}`;
  return {
    viewer,
    close: states.close,
    line: `traces: ${viewer.url} (a task's trace: ${viewer.url}/traces/<traceId>)\nmetrics: ${metrics}`,
  };
}

/**
 * `starry dev` and the demo run only on a server this folder started (it holds the SQLite file's lock):
 * on a stranger's (another checkout's, a plain `temporal server start-dev`) their worker would mix with
 * its workers and content store, and take its agents over. Refused before anything runs there.
 *
 * @throws ExitError (1) naming the busy port and what to do.
 */
async function refuseStranger(server: DevServer, command: 'dev' | 'demo'): Promise<void> {
  if (server.started || server.dbFile) return;
  const port = Number(server.address.split(':').pop());
  // A port that is free now, with its Web UI port: the suggestion works when followed.
  const { freeDevPort } = await import('../../dev/dev-server');
  const free = await freeDevPort(port === 7300 ? 7400 : 7300);
  const again = command === 'dev' ? `starry dev --port ${free}` : `npm run demo -- --port ${free}`;
  throw new ExitError(
    `${server.address} is held by a Temporal server this folder did not start (another checkout's, or a plain \`temporal server start-dev\`): ` +
      `its agents, workers and transcript store are not this folder's, and this folder's worker there would mix with them. ` +
      `Start this folder's own on a free port (\`${again}\`, Web UI on ${free + 1000}) or stop that server; ` +
      `to serve its agents, run \`starry worker\` with TEMPORAL_ADDRESS=${server.address} (a worker changes no routing there)`,
    EXIT.FAILED,
  );
}

/**
 * Which server a command uses: one it started, this folder's (it holds the SQLite file's lock), or a
 * stranger's that happens to listen on the port, whose data and workers are not this folder's.
 */
function serverLine(server: DevServer): string {
  if (server.started) return `started Temporal dev server at ${server.address}`;
  if (server.dbFile) return `using the running Temporal dev server at ${server.address}`;
  return `using the Temporal server already listening on ${server.address}, which starry did not start from this folder: the agents land in its data, any worker polling task queue ${TASK_QUEUE} there may run them, and its Web UI is its own; \`--port N\` (a free port) starts this folder's own dev server, with its Web UI on N + 1000`;
}

/** Where tasks' workspaces may lie on this machine: what a developer needs before `--workspace`. */
function rootsLine(): string {
  const { rootsFrom, policy } = workerConfigFromEnv();
  const roots = policy.roots.map(shown).join(', ');
  return rootsFrom
    ? `workspaces: under ${roots} (${rootsFrom})`
    : `workspaces: under ${roots} (the default: a folder of their own; STARRY_WORKSPACE_ROOTS names others)`;
}

/** A folder as a reader finds it: relative when it is below the working directory, else absolute. */
function shown(dir: string): string {
  const rel = path.relative(process.cwd(), dir);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : dir;
}
