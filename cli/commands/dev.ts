/**
 * The local dev server: `starry dev` (server, worker and API in the foreground), `starry demo` (the
 * EPERM scenario on it) and `starry server start|stop` (in the background). The dev server's module is
 * loaded only by these commands: the others start faster.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { TASK_QUEUE, temporalEnv } from '../../client/connection';
import { qualifiedAgentId } from '../../core/tenant';
import { projectRoot } from '../../dev/paths';
import { agentWorkflowId, webUiLink } from '../../workflows/messages';
import { actingTenant, EXIT, ExitError, parsePort, sayErr, untilSignal } from '../common';
import { say } from '../format';
import { runTask } from './task';
import { startApi } from './serve';

/** Register dev, demo and server. */
export function devCommands(program: Command): void {
  program
    .command('dev')
    .description('the embedded default: a local Temporal dev server (SQLite, Web UI) plus a worker, in the foreground')
    .option('--port <n>', 'gRPC port', (v) => Number(v), 7233)
    .option('--db <file>', 'SQLite file (default .temporal/dev.db)')
    .option('--api-port <n>', 'port of the HTTP API beside the worker (0: none)', parsePort, 8080)
    .action(async (o: { port: number; db?: string; apiPort: number }) => {
      const { startDevServer } = await import('../../dev/dev-server');
      const server = await startDevServer({ port: o.port, ...(o.db ? { dbFile: path.resolve(o.db) } : {}) });
      process.env.TEMPORAL_ADDRESS = server.address;
      const w = await (await import('../../dev/embedded')).startEmbeddedWorker(temporalEnv());
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
      const server = await (await import('../../dev/dev-server')).startDevServer({ port: 7233, detached: true });
      process.env.TEMPORAL_ADDRESS = server.address;
      process.env.STARRY_UI_URL = server.uiUrl;
      const agentId = `demo-${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}`;
      if (!o.json) sayErr(`agent ${agentId}: fs.read /root/secret.txt is outside its workspace; watch the pain and the correction\n\n`);
      const config = path.join(root, 'examples/eperm/agent.json');
      process.exitCode = await runTask({ goal: 'Tell me what /root/secret.txt says.', agent: agentId, flags: { config }, json: o.json, worker: 'always' });
      if (!o.json) {
        say(`\nAgent workflow: ${webUiLink(server.uiUrl, agentWorkflowId(qualifiedAgentId(actingTenant(), agentId)))}\n`);
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
      const { startDevServer, stopDevServer } = await import('../../dev/dev-server');
      if (action === 'start') {
        const s = await startDevServer({ port: o.port, detached: true });
        say(`${s.started ? 'started' : 'already running'}: ${s.address} · Web UI ${s.uiUrl}\n`);
      } else if (action === 'stop') {
        const stopped = await stopDevServer(o.port);
        say(stopped ? `stopped the dev server on port ${o.port}\n` : `no dev server started by starry on port ${o.port}\n`);
      } else throw new ExitError(`unknown action "${action}": use start or stop`, EXIT.USAGE);
    });
}
