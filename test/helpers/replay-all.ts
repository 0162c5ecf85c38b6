/**
 * Replay every agent and task history the integration run produced against the code under test.
 * A workflow that behaves differently live and on replay (a nondeterminism) passes its own test and
 * only fails later, on another worker or after a cache eviction; replaying each history catches it.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { runEvents } from '../../client/history';
import { contextStrategyIds } from '../../core/context-strategy';
import { guideIds } from '../../core/guides';
import { loadPlugins } from '../../workers/plugins';
import { workflowSource } from '../../workers/worker';

/**
 * The plugin modules the integration tests give their workers: the fixture, and the library example's
 * (compiled by its test; absent when that test did not run, and then no history needs it).
 */
function fixturePlugins(): string[] {
  const example = path.resolve(__dirname, '..', '..', 'examples', 'library', 'dist', 'plugin.js');
  return [
    path.resolve(__dirname, '..', 'fixtures', 'plugins', 'cautious.js'),
    ...(existsSync(example) ? [example] : []),
  ];
}

type ReplayHistories = Parameters<typeof Worker.runReplayHistories>[1];

/** Whether a history is a task's whose guide or context strategy is none of the shipped ones (its config is in its input). */
function usesPlugin(history: temporal.api.history.v1.IHistory): boolean {
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  if (started?.workflowType?.name !== 'taskWorkflow') return false;
  try {
    const input = JSON.parse(Buffer.from(started.input?.payloads?.[0]?.data ?? new Uint8Array()).toString('utf8')) as {
      config?: { guide?: string; context?: { strategy?: string } };
    };
    const { guide, context } = input.config ?? {};
    return (
      (guide !== undefined && !guideIds().includes(guide)) ||
      (context?.strategy !== undefined && !contextStrategyIds().includes(context.strategy))
    );
  } catch {
    return false;
  }
}

/** gRPC's NOT_FOUND: the server has no such workflow run. */
const GRPC_NOT_FOUND = 5;

export interface ReplayAllReport {
  replayed: number;
  /** `workflowId/runId`, the replayer's message, and where the history was saved. */
  failures: { workflowId: string; error: string; file: string }[];
}

/**
 * Replays the closed and running agent/task workflows started since `since`; failing histories are saved under
 * `saveDir`.
 */
export async function replayAllHistories(address: string, since: Date, saveDir: string): Promise<ReplayAllReport> {
  // The replaying worker's own lifecycle lines are noise here; failures come back in the report.
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // A runtime is already installed in this process: its logger stays.
  }
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    const query = `WorkflowType IN ('agentWorkflow', 'taskWorkflow') AND StartTime >= '${since.toISOString()}'`;
    async function* histories() {
      for await (const wf of client.workflow.list({ query })) {
        let history;
        try {
          // In pages under gRPC's 4 MiB limit: a run of large ticks is larger than one answer may be.
          const events = [];
          for await (const e of runEvents(client, wf.workflowId, wf.runId, {})) events.push(e);
          history = { events };
        } catch (err) {
          // Deleted since it was listed (the client deletes the run of an agent whose first submit was refused).
          if (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND) continue;
          throw err;
        }
        yield { workflowId: `${wf.workflowId}/${wf.runId}`, history };
      }
    }
    const report: ReplayAllReport = { replayed: 0, failures: [] };
    const kept = new Map<string, unknown>();
    // A task that ran a plugin's guide (test/integration/plugins.test.ts) replays on the code of its worker,
    // which bundled the plugin: set aside here, replayed after the others.
    const withPlugins: Array<{ workflowId: string; history: never }> = [];
    async function* keeping() {
      for await (const h of histories()) {
        kept.set(h.workflowId, h.history);
        if (usesPlugin(h.history)) withPlugins.push(h as never);
        else yield h;
      }
    }
    const replays = async (source: Parameters<typeof Worker.runReplayHistories>[0], all: ReplayHistories) => {
      for await (const result of Worker.runReplayHistories(source, all)) {
        report.replayed++;
        if (result.error) {
          mkdirSync(saveDir, { recursive: true });
          const file = path.join(saveDir, `${result.workflowId.replace(/[^\w.-]+/g, '_')}.json`);
          writeFileSync(file, JSON.stringify(historyToJSON(kept.get(result.workflowId) as never)));
          report.failures.push({
            workflowId: result.workflowId,
            error: String(result.error.message).slice(0, 600),
            file,
          });
        }
        kept.delete(result.workflowId);
      }
    };
    await replays({ ...workflowSource(process.env.STARRY_WORKFLOW_BUNDLE), replayName: 'replay-all' }, keeping());
    if (withPlugins.length)
      await replays(
        { ...workflowSource(undefined, loadPlugins(fixturePlugins())), replayName: 'replay-all-plugins' },
        withPlugins,
      );
    return report;
  } finally {
    await connection.close();
    // The runtime's native threads would keep jest's parent process alive after the run.
    await Runtime.instance().shutdown();
  }
}
