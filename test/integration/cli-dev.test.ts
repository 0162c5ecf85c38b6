/**
 * The local dev server, one per folder's SQLite file: `starry dev`, `starry dev --otel`, `starry demo`.
 * Exit codes: 0 completed, 1 failed, 2 locked/stopped/refused, 64 usage (README).
 */
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import { serveApi } from '../../api/serve';
import { projectRoot } from '../../dev/paths';
import { address, privateDir, uniqueId } from '../helpers/harness';
import { eventually } from '../../dev/poll';
import { freePort, isListening } from '../../dev/dev-server';
import { QUEUE, starryAsync, starryLive } from '../helpers/cli';

jest.setTimeout(180_000);

const stateDir = () => privateDir('starry-state');
const inFolder = (dir: string) => ({ STARRY_STATE_DIR: dir });

describe("the local dev server, one per folder's SQLite file", () => {
  const pidOf = (dir: string, port: number) => Number(readFileSync(path.join(dir, `server-${port}.pid`), 'utf8'));

  it('refuses a second server on the file, naming the running one, while `starry dev` runs; Ctrl-C stops it and frees the file', async () => {
    const dir = stateDir();
    const a = await freePort();
    let b = 0; // chosen once a runs: its internal services take free ports of their own
    const queue = uniqueId('cli-dev-q');
    const dev = starryLive(['dev', '--port', String(a), '--api-port', '0'], queue, inFolder(dir));
    try {
      await dev.until(
        'stderr',
        new RegExp(
          `^started Temporal dev server at 127\\.0\\.0\\.1:${a}\\nWeb UI: http://127\\.0\\.0\\.1:${a + 1000}\\nworkspaces: under [^\\n]+\\nworker running on task queue ${queue}; Ctrl-C stops all\\n`,
        ),
      );
      b = await freePort();
      const refusal = new RegExp(
        `^starry: the SQLite file ${dir}/dev\\.db is in use by the Temporal dev server at 127\\.0\\.0\\.1:${a} \\(pid ${pidOf(dir, a)}, Web UI http://127\\.0\\.0\\.1:${a + 1000}\\), and two servers must not share one file: use that one \\(--port ${a}, or TEMPORAL_ADDRESS=127\\.0\\.0\\.1:${a}\\), stop it first .*, or give this one a file of its own \\(\`starry dev --db FILE\`\\)\\n$`,
      );
      for (const args of [
        ['server', 'start', '--port', String(b)],
        ['dev', '--port', String(b), '--api-port', '0'],
      ]) {
        const second = await starryAsync(args, queue, inFolder(dir));
        expect([args, second.code, second.stderr]).toEqual([args, 1, expect.stringMatching(refusal)]);
      }
      dev.child.kill('SIGINT');
      expect(await dev.exited).toBe(0);
      expect(dev.out().stderr).toContain(`stopped (agents are kept in ${dir}/dev.db)\n`);
      const after = await starryAsync(['server', 'start', '--port', String(b)], queue, inFolder(dir));
      expect(after).toMatchObject({
        code: 0,
        stdout: `started: 127.0.0.1:${b} · Web UI http://127.0.0.1:${b + 1000}\n`,
      });
      expect(await starryAsync(['server', 'stop', '--port', String(b)], queue, inFolder(dir))).toMatchObject({
        code: 0,
        stdout: `stopped the dev server on port ${b}\n`,
      });
    } finally {
      dev.child.kill('SIGINT');
      await dev.exited;
      if (b) await starryAsync(['server', 'stop', '--port', String(b)], queue, inFolder(dir));
    }
  });

  it('says at once that a port held by a gRPC program other than Temporal is not a server to use', async () => {
    // An HTTP/2 listener that answers every call as a gRPC server without Temporal's services does.
    const other = http2.createServer();
    other.on('stream', (stream) =>
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'unknown service' },
        { endStream: true },
      ),
    );
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const port = (other.address() as { port: number }).port;
    try {
      const r = await starryAsync(['server', 'start', '--port', String(port)], QUEUE, inFolder(stateDir()));
      expect(r).toMatchObject({
        code: 1,
        stderr: `starry: port ${port} is in use by a program that is not a Temporal server (it answered: 12 UNIMPLEMENTED: unknown service): choose a free port (--port N)\n`,
      });
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it('leaves no lock behind a server killed with SIGKILL: the next one starts on the file', async () => {
    const dir = stateDir();
    const a = await freePort();
    let b = 0; // chosen once a runs: its internal services take free ports of their own
    try {
      expect(await starryAsync(['server', 'start', '--port', String(a)], QUEUE, inFolder(dir))).toMatchObject({
        code: 0,
      });
      b = await freePort();
      expect(await starryAsync(['server', 'start', '--port', String(b)], QUEUE, inFolder(dir))).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/is in use by the Temporal dev server/),
      });
      process.kill(pidOf(dir, a), 'SIGKILL');
      // Its sockets close with its other files, the lock's among them.
      await eventually('the killed server gone', async () => ((await isListening(a)) ? undefined : true));
      expect(await starryAsync(['server', 'start', '--port', String(b)], QUEUE, inFolder(dir))).toMatchObject({
        code: 0,
        stdout: expect.stringMatching(/^started: /),
      });
    } finally {
      for (const port of [a, b].filter(Boolean))
        await starryAsync(['server', 'stop', '--port', String(port)], QUEUE, inFolder(dir));
    }
  });
});

describe('an HTTP API port that is taken', () => {
  const refusal = (port: number, flag: string) =>
    `starry: port ${port} of the HTTP API is in use by another program, so this command's API cannot listen there, ` +
    `and requests to 127.0.0.1:${port} (the README's curl lines) would reach that program, not this folder's agents: ` +
    `choose another with ${flag} N${flag === '--api-port' ? ' (0: no API)' : ''}, or stop that program ` +
    `(\`ss -ltnp 'sport = :${port}'\` or \`lsof -i :${port}\` names its process)\n`;

  it('stops `starry dev` before anything starts, naming the port, the holder and --api-port; and `starry api`, naming --port', async () => {
    // A plain TCP listener, as any other program holds a port.
    const held = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
    const apiPort = (held.address() as net.AddressInfo).port;
    try {
      const port = await freePort();
      const dev = await starryAsync(
        ['dev', '--port', String(port), '--api-port', String(apiPort)],
        QUEUE,
        inFolder(stateDir()),
      );
      expect(dev).toMatchObject({ code: 1, stderr: refusal(apiPort, '--api-port') });
      expect(await isListening(port)).toBe(false);
      const api = await starryAsync(['api', '--insecure-dev', '--port', String(apiPort)], QUEUE);
      expect(api).toMatchObject({ code: 1, stderr: refusal(apiPort, '--port') });
    } finally {
      await new Promise((resolve) => held.close(resolve));
    }
  });

  it("names an OpenStarry API as the holder (another checkout's `starry dev`)", async () => {
    const other = await serveApi({ port: 0, insecureDev: true });
    const port = Number(new URL(other.url).port);
    try {
      const api = await starryAsync(['api', '--insecure-dev', '--port', String(port)], QUEUE);
      expect(api.code).toBe(1);
      expect(api.stderr).toMatch(
        new RegExp(
          `^starry: port ${port} of the HTTP API is in use by an OpenStarry HTTP API \\(another checkout's \`starry dev\` or a \`starry api\`, most likely\\), `,
        ),
      );
    } finally {
      await other.close();
    }
  });
});

describe('starry dev --otel', () => {
  it("serves a trace viewer beside its worker, which traces to it, and names each finished task's trace page", async () => {
    const port = await freePort();
    const metrics = await freePort();
    const queue = uniqueId('cli-otel-q');
    const dev = starryLive(['dev', '--otel', '--otel-port', '0', '--port', String(port), '--api-port', '0'], queue, {
      ...inFolder(stateDir()),
      OTEL_EXPORTER_PROMETHEUS_PORT: String(metrics),
      // A shell set up for a gRPC collector: the viewer speaks OTLP/HTTP, so --otel's traces must too.
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    try {
      await dev.until(
        'stderr',
        new RegExp(
          `^started Temporal dev server at 127\\.0\\.0\\.1:${port}\\nWeb UI: \\S+\\ntraces: (http://127\\.0\\.0\\.1:\\d+) \\(a task's trace: \\1/traces/<traceId>\\)\\nmetrics: http://127\\.0\\.0\\.1:${metrics}/metrics\\nworkspaces: under [^\\n]+\\nworker running on task queue ${queue}; Ctrl-C stops all\\n`,
        ),
      );
      const viewer = /traces: (\S+)/.exec(dev.out().stderr)![1]!;
      const agent = uniqueId('cli-otel');
      const config = path.join(projectRoot(), 'examples/eperm/agent.json');
      const run = await starryAsync(
        ['run', 'Tell me what /root/secret.txt says.', '--agent', agent, '--config', config],
        queue,
        // The dev's worker (traced) runs it: `run` starts none of its own where one polls.
        { TEMPORAL_ADDRESS: `127.0.0.1:${port}`, STARRY_RUN_WORKER: 'auto' },
      );
      expect(run.code).toBe(0);
      const line = new RegExp(`trace of agent-${agent}-task-1 \\(COMPLETED\\): (${viewer}/traces/[0-9a-f]{32})\\n`);
      await dev.until('stderr', line);
      const page = await fetch(line.exec(dev.out().stderr)![1]!);
      expect(page.status).toBe(200);
      const html = await page.text();
      for (const shown of ['invoke_agent', 'chat turns.json', 'execute_tool fs.read', '◆ starry.pain EPERM'])
        expect(html).toContain(shown);
      dev.child.kill('SIGINT');
      expect(await dev.exited).toBe(0);
    } finally {
      dev.child.kill('SIGINT');
      await dev.exited;
    }
  });
});

describe('starry demo', () => {
  it('refuses a server that listens on its port already and was not started from this folder, naming it', async () => {
    const port = Number(address().split(':').pop());
    const queue = uniqueId('cli-demo-q');
    const r = await starryAsync(['demo', '--port', String(port)], queue, {
      STARRY_STATE_DIR: privateDir('starry-state'),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `starry: ${address()} is held by a Temporal server this folder did not start (another checkout's, or a plain \`temporal server start-dev\`)`,
    );
    expect(r.stderr).toMatch(/Start this folder's own on a free port \(`npm run demo -- --port \d+`, Web UI on \d+\)/);
    // Nothing ran there: no agent of the demo's on that server.
    expect(r.stdout).toBe('');
    expect(r.stderr).not.toMatch(/submitted/);
  });

  it('refuses, in the demo and in `starry dev` alike, a port whose Web UI port another program holds, naming it and a free pair', async () => {
    // Another program on port + 1000: the server could not start, and a Web UI link would reach that program.
    const port = await freePort();
    const squatter = net.createServer().listen(port + 1000, '127.0.0.1');
    await new Promise((r) => squatter.once('listening', r));
    try {
      for (const args of [
        ['demo', '--port', String(port)],
        ['dev', '--port', String(port), '--api-port', '0'],
      ]) {
        const r = await starryAsync(args, uniqueId('cli-ui-q'), inFolder(stateDir()));
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(`the Web UI port ${port + 1000} (port + 1000) is taken by another program`);
        const free = Number(/`--port (\d+)`/.exec(r.stderr)?.[1]);
        expect(await isListening(free)).toBe(false);
        expect(await isListening(free + 1000)).toBe(false);
        // Nothing started on the port.
        expect(await isListening(port)).toBe(false);
      }
    } finally {
      squatter.close();
    }
  });

  it("starts this folder's own dev server on --port, with its Web UI on the port + 1000, and says how to stop it", async () => {
    const dir = privateDir('starry-state');
    const port = await freePort();
    try {
      const r = await starryAsync(['demo', '--port', String(port)], uniqueId('cli-demo-q'), { STARRY_STATE_DIR: dir });
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(
        new RegExp(
          `^starting a Temporal dev server on 127\\.0\\.0\\.1:${port} \\(SQLite in ${path.relative(process.cwd(), dir)}/, kept running for the Web UI on port ${port + 1000}\\)…\\n`,
        ),
      );
      expect(r.stdout).toMatch(/^outcome COMPLETED · agent WAITING_FOR_EVENT$/m);
      expect(r.stdout).toContain(
        `Agent workflow: http://127.0.0.1:${port + 1000}/namespaces/default/workflows/agent-demo-`,
      );
      expect(r.stdout).toContain(
        `The dev server keeps running for the Web UI; \`npm run stop -- --port ${port}\` stops it.\n`,
      );
      expect(
        await starryAsync(['server', 'start', '--port', String(port)], QUEUE, { STARRY_STATE_DIR: dir }),
      ).toMatchObject({
        code: 0,
        stdout: `already running: 127.0.0.1:${port} · Web UI http://127.0.0.1:${port + 1000}\n`,
      });
    } finally {
      await starryAsync(['server', 'stop', '--port', String(port)], QUEUE, { STARRY_STATE_DIR: dir });
    }
  });
});
