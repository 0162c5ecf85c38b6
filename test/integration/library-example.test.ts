/**
 * The package as a library (docs/LIBRARY.md): the example in examples/library run as a user runs it
 * (`npm run example`, no stdin, only TEMPORAL_ADDRESS given) against the run's dev server, and the
 * package as a dependency: what `npm pack` publishes, and `require('openstarry-temporal')` resolving
 * through package.json `exports`. Needs the build (`npm run build`; `npm test`'s setup does it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import { Client, Connection } from '@temporalio/client';
import { address } from '../helpers/harness';

jest.setTimeout(300_000);

const root = projectRoot();

beforeAll(() => {
  const missing = ['lib/index.js', 'lib/index.d.ts', 'lib/workflow-bundle.js'].filter(
    (f) => !existsSync(path.join(root, f)),
  );
  if (missing.length)
    throw new Error(
      `${missing.join(', ')} missing: the example uses the compiled package, run \`npm run build\` first`,
    );
});

/** The environment a user has: the server's address, none of the test run's worker settings. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: address() };
  for (const name of [
    'STARRY_LLM',
    'STARRY_WORKER_POLICY',
    'STARRY_WORKFLOW_BUNDLE',
    'STARRY_STORE_DIR',
    'STARRY_TASK_QUEUE',
  ])
    delete env[name];
  return env;
}

it('runs: a task with an MCP server’s tools and a worker’s own tool, then halt (STOPPED), unlock and a task that completes, then a task driven by the worker’s own guide and context strategy from a plugin module; and leaves no agent running on its queue', async () => {
  const r = spawnSync('npm', ['run', '--silent', 'example'], {
    cwd: root,
    env: userEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    timeout: 240_000,
  });
  const out = r.stdout ?? '';
  expect(r.status === 0 ? 'exit 0' : `exit ${r.status} (${r.signal})\n${out}\n${r.stderr}`).toBe('exit 0');
  // Each line the example prints at its step, in this order.
  const expected = [
    // The worker's own tool ran in the example's process and said what it computed.
    '  [worker] text.wordcount → {"words":6,"characters":40}',
    // The MCP server's tools were called by their config names (server `notes`).
    '  → notes.add {"text":"Temporal keeps every agent task durable."} ok',
    '  → notes.list {} ok',
    '  → text.wordcount {"text":"Temporal keeps every agent task durable."} ok',
    '  task-1 COMPLETED in 5 tick(s)',
    '  final answer: Done: the note "Temporal keeps every agent task durable." is saved and listed by the notes server, and it has 6 words.',
    // What the MCP server kept: its notes file in the task's workspace.
    '  notes the MCP server saved: [ "Temporal keeps every agent task durable." ]',
    '  [worker] clock.wait: waiting 25 s',
    '  halt → agent state STOPPED',
    '  [worker] clock.wait: cancelled, the halt reached the tool',
    '  task-2 CANCELLED (SYSTEM_HALT)',
    '  unlock → agent state WAITING_FOR_EVENT',
    '  task-3 COMPLETED',
    // The worker's own guide and strategy, from its plugin module (the worker refuses at submit a guide or
    // a strategy it lacks); the guide told the model about the failed read.
    '  submitted task-4 with guide careful and context strategy short',
    '  the careful guide told the model: CAREFUL: Tool fs.read failed: ENOENT',
    '  → fs.read {"path":"draft.txt"} failed ENOENT',
    '  → fs.list {} ok',
    '  task-4 COMPLETED',
    '  final answer: There is no draft.txt in the workspace yet: nothing to summarize.',
    '  agent library-',
    'worker stopped; example done',
  ];
  let at = 0;
  const found = expected.map((line) => {
    const i = out.indexOf(`\n${line}`, at);
    if (i >= 0) at = i + line.length;
    return [line, i >= 0];
  });
  expect(found.filter(([, ok]) => !ok).map(([line]) => `${String(line)}\n--- in ---\n${out}`)).toEqual([]);
  // Its worker stopped with it: its agent must not be left running on a queue nobody polls.
  const agentId = /submitted task-1 to agent (\S+)/.exec(out)?.[1];
  const connection = await Connection.connect({ address: address() });
  try {
    const { status } = await new Client({ connection }).workflow.getHandle(`agent-${agentId}`).describe();
    expect(status.name).not.toBe('RUNNING');
  } finally {
    await connection.close();
  }
});

it('is a package: npm pack publishes the compiled entry with its declarations, and require() resolves through exports', () => {
  const pack = spawnSync('npm', ['pack', '--dry-run', '--json'], { cwd: root, encoding: 'utf8', timeout: 120_000 });
  expect(pack.status).toBe(0);
  const [manifest] = JSON.parse(pack.stdout) as Array<{ name: string; files: Array<{ path: string }> }>;
  const files = manifest!.files.map((f) => f.path);
  expect(files).toEqual(
    expect.arrayContaining([
      'lib/index.js',
      'lib/index.d.ts',
      'lib/plugins.js',
      'lib/plugins.d.ts',
      'lib/workflow-bundle.js',
      'lib/workers/worker.d.ts',
      'lib/activities/tools/define.d.ts',
      'bin/starry.js',
      'docs/LIBRARY.md',
    ]),
  );
  expect(
    files.filter(
      (f) =>
        /^(test|node_modules|\.tools|\.temporal|examples|lib\/infra|lib\/bench)\//.test(f) || f.endsWith('.test.js'),
    ),
  ).toEqual([]);

  // The package imports itself by name (as a dependency would be imported): only the `exports` entry.
  const probe = [
    "const m = require('openstarry-temporal');",
    "let deep; try { require('openstarry-temporal/lib/core/config'); deep = 'allowed'; } catch (e) { deep = e.code; }",
    "const p = require('openstarry-temporal/plugins');",
    "console.log(JSON.stringify({ resolved: require.resolve('openstarry-temporal'), plugins: require.resolve('openstarry-temporal/plugins'), defineGuide: [typeof m.defineGuide, typeof p.defineGuide], deep, kinds: Object.fromEntries(['createWorker', 'AgentClient', 'defineTool', 'ToolError', 'connectClient', 'connectWorker', 'parseAgentConfig', 'workerConfigFromEnv', 'runWorker'].map((k) => [k, typeof m[k]])), codes: m.ERROR_CODES.length }));",
  ].join('\n');
  const r = spawnSync(process.execPath, ['-e', probe], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  expect(r.stderr).toBe('');
  expect(JSON.parse(r.stdout)).toEqual({
    resolved: path.join(root, 'lib', 'index.js'),
    // The entry a worker's plugin module imports (docs/LIBRARY.md#plugins); defineGuide is at the root too.
    plugins: path.join(root, 'lib', 'plugins.js'),
    defineGuide: ['function', 'function'],
    deep: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
    kinds: {
      createWorker: 'function',
      AgentClient: 'function',
      defineTool: 'function',
      ToolError: 'function',
      connectClient: 'function',
      connectWorker: 'function',
      parseAgentConfig: 'function',
      workerConfigFromEnv: 'function',
      runWorker: 'function',
    },
    codes: expect.any(Number),
  });
});
