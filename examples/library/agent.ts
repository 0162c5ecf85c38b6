/**
 * OpenStarry as a library, end to end (docs/LIBRARY.md walks through it): a worker in this process with
 * the package's workflows, two tools of its own, an MCP server, and a guide and a context strategy of its
 * own from a plugin module (plugin.ts); a task submitted from code that uses the tools; the kill switch: halt a running agent,
 * see it STOPPED, unlock it, and see it work again; then a task driven by the worker's own guide and strategy.
 *
 *   npm run build && npm run example      # in the repository; TEMPORAL_ADDRESS defaults to 127.0.0.1:7233
 *   STARRY_LLM=openai:gpt-4o-mini@https://api.openai.com/v1 npm run example   # a real model instead of turns.json
 *
 * Exits 0 when every step went as expected, 1 with the reason otherwise.
 */
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import {
  AgentClient,
  connectClient,
  connectWorker,
  createWorker,
  defineTool,
  ensureSearchAttributes,
  installWorkerLogger,
  parseAgentConfig,
  ToolError,
  workerConfigFromEnv,
  type AgentConfig,
  type AgentState,
  type TaskResult,
} from 'openstarry-temporal';

/** The example's own task queue: its worker is the only one polling it. */
const TASK_QUEUE = 'openstarry-library-example';
/**
 * The example's own Worker Deployment (docs/ARCHITECTURE.md#versioning): an application is a service of
 * its own, whose worker versions come and go with it, apart from `starry worker`'s `openstarry`.
 */
const DEPLOYMENT = 'openstarry-library-example';
/** The example's sources (turns.json, wait-turns.json) are one folder above the compiled dist/. */
const SOURCES = path.resolve(__dirname, '..');
/** The worker's plugin module (compiled next to this file): it gives the guide `careful`. */
const PLUGIN = path.join(__dirname, 'plugin.js');
/** The MCP server the agent config names (compiled next to this file). */
const NOTES_SERVER = path.join(__dirname, 'notes-server.mjs');
/** The node_modules the server's imports resolve from: its sandbox sees it read-only, besides the server's folder. */
const NODE_MODULES =
  require.resolve.paths('@modelcontextprotocol/sdk')?.find((dir) => existsSync(dir)) ??
  path.join(SOURCES, 'node_modules');

const say = (line: string) => process.stdout.write(`${line}\n`);

/** An unexpected outcome: the example stops with this message and exit code 1. */
class Unexpected extends Error {}

// ---- the worker's own tools -----------------------------------------------------------------------

/** A tool that computes something: its input is a zod schema, the model sees it as JSON Schema. */
const wordcount = defineTool({
  name: 'text.wordcount',
  description: 'Count the words and characters of a text.',
  input: z.object({ text: z.string().describe('The text to count.') }),
  run({ text }) {
    // A ToolError is pain the model can act on: a code of the taxonomy, a message, a suggestion.
    if (!text.trim())
      throw ToolError.of({
        code: 'EINVAL',
        message: 'EINVAL: the text is empty',
        suggestion: 'Pass the text whose words you want counted.',
      });
    const result = { words: text.trim().split(/\s+/).length, characters: text.length };
    say(`  [worker] text.wordcount → ${JSON.stringify(result)}`);
    return result;
  },
});

/** Resolved when clock.wait starts, so the example halts while a tool is running. */
let waitStarted: () => void = () => undefined;

/** A tool that takes time and honours its cancellation signal (SYSTEM_HALT aborts it). */
const clockWait = defineTool({
  name: 'clock.wait',
  description: 'Wait the given number of seconds, then return.',
  input: z.object({ seconds: z.number().int().min(1).max(25) }),
  run({ seconds }, { signal }) {
    say(`  [worker] clock.wait: waiting ${seconds} s`);
    waitStarted();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        say('  [worker] clock.wait: cancelled, the halt reached the tool');
        // Rejecting with the signal's reason makes the call count as cancelled, not as a failure.
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve({ waited: seconds });
      }, seconds * 1000);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  },
});

// ---- the example --------------------------------------------------------------------------------------

async function main(): Promise<void> {
  // A temporary workspace for the agent (the worker's policy allows nothing else) and a folder for the
  // transcript store (a worker without STARRY_STORE_BUCKET keeps transcripts in STARRY_STORE_DIR).
  const state = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'starry-library-')));
  try {
    const workspace = path.join(state, 'workspace');
    mkdirSync(workspace);
    // MCP servers never run as root: as root, the worker runs them as nobody, who must be able to write here.
    if (process.getuid?.() === 0) chownSync(workspace, 65534, 65534);
    process.env.STARRY_STORE_DIR ??= path.join(state, 'blobs');
    await run(workspace);
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}

async function run(workspace: string): Promise<void> {
  // The worker's configuration comes from its environment, as `starry worker`'s does; the policy is the
  // operator's outer limit for every tool call: this workspace, and `node notes-server.mjs` as the one MCP
  // server, which sees its code read-only in its sandbox and to which a config may pass NOTES_FILE.
  const notes = { command: 'node', args: [NOTES_SERVER], readOnly: [__dirname, NODE_MODULES], env: ['NOTES_FILE'] };
  const config = workerConfigFromEnv({
    ...process.env,
    STARRY_TASK_QUEUE: TASK_QUEUE,
    // llmDirs: where the scripted model's turns are read from (the example's own folder).
    STARRY_WORKER_POLICY: JSON.stringify({ roots: [workspace], llmDirs: [SOURCES], mcpCommands: [notes] }),
  });
  const llm = process.env.STARRY_LLM ?? `scripted:${path.join(SOURCES, 'turns.json')}`;
  const waitLlm = process.env.STARRY_LLM ?? `scripted:${path.join(SOURCES, 'wait-turns.json')}`;
  const carefulLlm = process.env.STARRY_LLM ?? `scripted:${path.join(SOURCES, 'careful-turns.json')}`;
  say(
    `OpenStarry library example: Temporal ${config.temporal.address} (namespace ${config.temporal.namespace}), task queue ${TASK_QUEUE}`,
  );
  say(`  LLM ${llm}`);

  // The SDK's own log lines at WARN and above only, each failure as one readable line, on stderr.
  installWorkerLogger('WARN');
  const connection = await connectClient(config.temporal);
  // The workflows write search attributes (AgentState, …): a server the package did not start needs
  // them registered once per namespace (Temporal Cloud: with tcld, see docs/LIBRARY.md).
  await ensureSearchAttributes(connection, config.temporal.namespace).catch((err: Error) => {
    throw new Unexpected(
      `cannot register the search attributes on ${config.temporal.address}: ${err.message}. Register them once per namespace (docs/LIBRARY.md).`,
    );
  });
  const workerConnection = await connectWorker(config.temporal);
  // The one process of this application runs its one version: it takes the deployment over at start,
  // with whatever an earlier build of it left behind.
  const worker = await createWorker({
    connection: workerConnection,
    config,
    tools: [wordcount, clockWait],
    // Its own guides come from plugin modules: bundled into its workflow code at start (so its build id
    // changes with their code), offered to agents besides the shipped ones.
    plugins: [PLUGIN],
    versioning: { deploymentName: DEPLOYMENT, makeCurrent: 'take-over' },
  });
  const running = worker.run(); // polls until shutdown(), then closes the MCP servers it started
  say(
    `  worker running in this process: tools text.wordcount, clock.wait; MCP server node notes-server.mjs; guide careful and context strategy short (plugin.js); workspace ${workspace}`,
  );

  const agents = new AgentClient({ connection, namespace: config.temporal.namespace, taskQueue: TASK_QUEUE });
  try {
    // A worker that stops on its own ends the example at once, rather than leaving tasks nobody runs.
    const stopped = running.then(() => Promise.reject(new Unexpected('the worker stopped before the example ended')));
    await Promise.race([demo(agents, { workspace, llm, waitLlm, carefulLlm }), stopped]);
  } finally {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running;
    await workerConnection.close();
    await connection.close();
  }
  say('worker stopped; example done');
}

/** The example's workspace and the LLM of each of its tasks. */
interface Llms {
  workspace: string;
  llm: string;
  waitLlm: string;
  carefulLlm: string;
}

async function demo(agents: AgentClient, { workspace, llm, waitLlm, carefulLlm }: Llms): Promise<void> {
  // One agent per run. An agent lives on across tasks, so the example ends its own when it is done: its
  // worker stops with the example, and an agent left running would wait on a queue nobody polls.
  const agentId = `library-${Date.now().toString(36)}`;
  try {
    await tasks(agents, agentId, { workspace, llm, waitLlm, carefulLlm });
  } finally {
    await agents.client.workflow
      .getHandle(agents.agentWorkflowId(agentId))
      .terminate('the library example is done: its worker stops with it')
      .then(() => say(`  agent ${agentId} ended: its worker stops with the example`))
      .catch(() => undefined); // never started
  }
}

async function tasks(
  agents: AgentClient,
  agentId: string,
  { workspace, llm, waitLlm, carefulLlm }: Llms,
): Promise<void> {
  const notesFile = path.join(workspace, 'notes.json');
  // The agent config as a user writes it; parseAgentConfig checks it and fills in the defaults.
  const notesConfig: AgentConfig = parseAgentConfig({
    llm,
    workspace: [workspace],
    instructions:
      'You keep the user’s notes with the notes server (notes.add, notes.list) and count words with text.wordcount. Answer in one sentence.',
    tools: {
      // Offered to the model: every tool of the MCP server `notes`, and one of the worker's own.
      allow: ['notes.*', 'text.wordcount'],
      mcp: { notes: { command: 'node', args: [NOTES_SERVER], env: { NOTES_FILE: notesFile } } },
    },
  });
  const goal =
    'Save the note "Temporal keeps every agent task durable." with the notes server, check that it is listed, and tell me how many words it has.';

  say('\n1. A task that uses the MCP server’s tools and the worker’s own tool');
  const first = await agents.submit(agentId, { goal, config: notesConfig });
  say(`  submitted ${first.taskId} to agent ${agentId}`);
  const result = await agents.waitForTask(agentId, first.taskId, { timeoutMs: 120_000 });
  printResult(result);
  expectOutcome(result, 'COMPLETED');
  say(
    `  notes the MCP server saved: ${existsSync(notesFile) ? readFileSync(notesFile, 'utf8').replace(/\s+/g, ' ').trim() : '(none)'}`,
  );

  say('\n2. The kill switch: halt a running agent, unlock it, and it works again');
  const started = new Promise<void>((resolve) => (waitStarted = resolve));
  const waitConfig = parseAgentConfig({ llm: waitLlm, workspace: [workspace], tools: { allow: ['clock.wait'] } });
  const long = await agents.submit(agentId, {
    goal: 'Wait 25 seconds with clock.wait, then say that you waited.',
    config: waitConfig,
  });
  say(`  submitted ${long.taskId}: a tool that waits`);
  // A real model may not call the tool: then the halt stops the task wherever it is.
  if (!(await within(started, 20_000))) say('  (the model has not called clock.wait after 20 s: halting anyway)');
  await agents.halt(agentId, { by: 'library-example', note: 'showing the kill switch' });
  say(`  halt → agent state ${await stateBecomes(agents, agentId, 'STOPPED')}`);
  const halted = await agents.waitForTask(agentId, long.taskId, { timeoutMs: 60_000 });
  say(`  ${halted.taskId} ${halted.outcome}${halted.reason ? ` (${halted.reason.code})` : ''}`);
  expectOutcome(halted, 'CANCELLED');
  // A stopped agent refuses tasks until a human unlocks it.
  const unlocked = await agents.unlock(agentId, { by: 'library-example', note: 'example: resume work' });
  say(`  unlock → agent state ${unlocked.agentState}: ${unlocked.message}`);
  if (unlocked.agentState !== 'WAITING_FOR_EVENT')
    throw new Unexpected(`after unlock the agent is ${unlocked.agentState}, not WAITING_FOR_EVENT`);
  const again = await agents.submit(agentId, { goal, config: notesConfig });
  say(`  submitted ${again.taskId}`);
  const after = await agents.waitForTask(agentId, again.taskId, { timeoutMs: 120_000 });
  printResult(after);
  expectOutcome(after, 'COMPLETED');

  say('\n3. A task with the worker’s own guide, `careful`, and context strategy, `short`, from its plugin module');
  // `guide` and `context.strategy` name a guide and a strategy the worker offers: shipped ones or its
  // plugins'. The worker checks at submit that it has them (and refuses the task, listing its own, when not).
  const carefulConfig = parseAgentConfig({
    llm: carefulLlm,
    workspace: [workspace],
    guide: 'careful',
    context: { strategy: 'short' },
    tools: { allow: ['fs.read', 'fs.list'] },
  });
  const careful = await agents.submit(agentId, {
    goal: 'Summarize draft.txt in the workspace in one sentence.',
    config: carefulConfig,
  });
  say(`  submitted ${careful.taskId} with guide careful and context strategy short`);
  const read = await agents.waitForTask(agentId, careful.taskId, { timeoutMs: 120_000 });
  // What the guide told the model about the failed call (a real model may make none).
  for (const pain of read.injections.filter((i) => i.kind === 'PAIN'))
    say(`  the careful guide told the model: ${pain.text.split('\n')[0]}`);
  printResult(read);
  expectOutcome(read, 'COMPLETED');
}

/** The task's outcome, its tool calls and its final answer. */
function printResult(r: TaskResult): void {
  for (const call of r.toolCalls) {
    say(
      `  → ${call.name} ${JSON.stringify(call.args)} ${call.status}${call.error ? ` ${call.error.code}: ${call.error.message}` : ''}`,
    );
  }
  say(`  ${r.taskId} ${r.outcome} in ${r.ticks} tick(s), ${r.tokensUsed} tokens; agent ${r.agentState}`);
  if (r.finalText) say(`  final answer: ${r.finalText}`);
}

function expectOutcome(r: TaskResult, outcome: TaskResult['outcome']): void {
  if (r.outcome === outcome) return;
  const why = r.error?.message ?? r.reason?.message ?? 'no reason given';
  throw new Unexpected(`${r.taskId} ended ${r.outcome}, not ${outcome}: ${why}`);
}

/** The agent's state once it is `want` (a query right after the halt signal normally sees it at once). */
async function stateBecomes(agents: AgentClient, agentId: string, want: AgentState): Promise<AgentState> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { agentState } = await agents.status(agentId);
    if (agentState === want) return agentState;
    if (Date.now() > deadline)
      throw new Unexpected(`agent ${agentId} is ${agentState}, not ${want}, 10 s after the halt`);
    await sleep(100);
  }
}

/** Wait for `p`, or `ms` at most: true when `p` came first (the timer is cleared, so it holds nothing open). */
async function within(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([
    p.then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return done;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

main().then(
  () => {
    process.exitCode = 0;
  },
  (err: unknown) => {
    process.stderr.write(`library example failed: ${err instanceof Error ? err.message : String(err)}\n`);
    // Exit now: after a failure a connection or the SDK's runtime may still hold the process open.
    process.exit(1);
  },
);
