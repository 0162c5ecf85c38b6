/**
 * Tools on a task queue of their own (`STARRY_TOOL_TASK_QUEUE`): one task's extra latency. Not a test: it
 * prints a table. Both layouts run on the same in-memory dev server, interleaved run by run: one worker
 * on one queue (the default), and a workflow worker whose tools go to a tool worker on a queue of its
 * own (both workers in this process, so the difference is the routing, not a process boundary).
 *
 * Each run is a fresh agent with one task of `--ticks` ticks (an instant scripted LLM turn and one
 * `fs.list` a tick, the last tick answering); its latency is the task workflow's span in the server's
 * timestamps (started → closed).
 *
 * ```sh
 * npm run build && node lib/bench/tool-queue.js --runs 20 --ticks 5
 * ```
 */
import { Connection } from '@temporalio/client';
import { AgentClient } from '../client/agent-client';
import { startEmbeddedWorker } from '../dev/embedded';
import { connectWorker } from '../workers/connection';
import { workerConfigFromEnv } from '../workers/env';
import { createToolWorker } from '../workers/worker';
import { environmentLine, eventMs, listingTask, percentile, startBenchStack } from './stack';

function parseArgs(argv: string[]): { runs: number; ticks: number } {
  const o = { runs: 20, ticks: 5 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = ({ '--runs': 'runs', '--ticks': 'ticks' } as const)[argv[i] as string];
    const n = Number(argv[i + 1]);
    if (!key || !Number.isInteger(n) || n < 1)
      throw new RangeError(`usage: tool-queue [--runs N] [--ticks N]; bad ${argv[i]} ${argv[i + 1] ?? ''}`);
    o[key] = n;
  }
  return o;
}

/** The task's span in the server's timestamps: its first event to its last. */
async function taskMs(agents: AgentClient, workflowId: string): Promise<number> {
  const events = (await agents.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return eventMs(events.at(-1)?.eventTime) - eventMs(events[0]?.eventTime);
}

async function main(): Promise<void> {
  const { runs, ticks } = parseArgs(process.argv.slice(2));
  const stack = await startBenchStack('tool-queue');
  const splitQueue = `${stack.taskQueue}-split`;
  const toolQueue = `${splitQueue}-tools`;
  const env = { address: stack.address, namespace: 'default' };
  const config = { ...workerConfigFromEnv(), toolTaskQueue: toolQueue };
  const workflows = await startEmbeddedWorker(env, splitQueue, { config, activities: { alerts: { log: () => {} } } });
  const toolConnection = await connectWorker(env);
  const tools = await createToolWorker({ connection: toolConnection, config, taskQueue: toolQueue });
  const toolsRunning = tools.run();
  const connection = await Connection.connect({ address: stack.address });
  const split = new AgentClient({ connection, taskQueue: splitQueue });
  const layouts = [
    { name: 'one queue (default)', agents: stack.agents, ms: [] as number[] },
    { name: 'tools on their own queue', agents: split, ms: [] as number[] },
  ];
  try {
    const task = listingTask(stack.dir, ticks);
    // One warm-up task each (bundles loaded, versions current), then the runs interleaved.
    for (let run = -1; run < runs; run++) {
      for (const layout of layouts) {
        const agentId = `toolq-${layout === layouts[0] ? 'one' : 'split'}-${run + 1}`;
        const { taskId, workflowId } = await layout.agents.submit(agentId, {
          goal: 'list the workspace',
          config: task,
        });
        const result = await layout.agents.waitForTask(agentId, taskId, { pollMs: 20, timeoutMs: 120_000 });
        if (result.outcome !== 'COMPLETED') throw new Error(`${layout.name}: the task ended ${result.outcome}`);
        if (run >= 0) layout.ms.push(await taskMs(layout.agents, workflowId));
      }
    }
  } finally {
    tools.shutdown();
    await toolsRunning;
    await toolConnection.close();
    await workflows.stop();
    await connection.close();
    await stack.stop();
  }
  const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  const median = (ms: number[]) =>
    percentile(
      [...ms].sort((a, b) => a - b),
      50,
    );
  const base = median(layouts[0]!.ms);
  console.log(environmentLine());
  console.log(`${runs} tasks per layout, ${ticks} ticks each (${ticks - 1} fs.list calls), interleaved\n`);
  console.log(row(['layout', 'median ms', 'p95 ms', 'extra per task ms (median)', 'extra per tool call ms']));
  console.log(row(['---', '---:', '---:', '---:', '---:']));
  for (const { name, ms } of layouts) {
    const sorted = [...ms].sort((a, b) => a - b);
    const extra = median(ms) - base;
    console.log(
      row([
        name,
        median(ms).toFixed(0),
        percentile(sorted, 95).toFixed(0),
        extra.toFixed(0),
        (extra / Math.max(1, ticks - 1)).toFixed(1),
      ]),
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
