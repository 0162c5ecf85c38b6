/**
 * The replay gate (docs/ARCHITECTURE.md#rolling-out-a-new-build): the recent histories of the current
 * version, fetched from the server, replayed against this build's workflow code before it may become
 * current. One replaying worker for them all; a nondeterminism is reported with the workflow, the run and
 * the first event that no longer matches.
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { runEvents } from '../client/history';
import type { RunRef } from '../client/deployment';
import { loadPlugins, pluginList } from '../workers/plugins';
import { silentSpanSinks } from '../workers/otel';
import { buildIdOf } from '../workers/versioning';
import { workflowCode } from '../workers/worker';
import { failed, type ReplayReport } from './replay';

/** A build's workflow code and the build id a worker of it runs as. */
export interface Build {
  buildId: string;
  code: string;
}

/**
 * This checkout's build, as `starry worker` would run it here: `bundlePath` (`--bundle`), else
 * STARRY_WORKFLOW_BUNDLE or lib/workflow-bundle.js, or the bundle with STARRY_PLUGINS' modules.
 */
export async function thisBuild(bundlePath?: string): Promise<Build> {
  const plugins =
    !bundlePath && process.env.STARRY_PLUGINS ? loadPlugins(pluginList(process.env.STARRY_PLUGINS)) : undefined;
  const code = await workflowCode(bundlePath ?? (plugins ? undefined : process.env.STARRY_WORKFLOW_BUNDLE), plugins);
  return { buildId: buildIdOf(code), code };
}

type Events = temporal.api.history.v1.IHistoryEvent[];

/**
 * Replay each run against `build`, yielding a report per run in order. The histories are read one at a
 * time (in pages under gRPC's message limit) and dropped once replayed.
 */
export async function* replayRuns(client: Client, runs: RunRef[], build: Build): AsyncGenerator<ReplayReport> {
  // The replayer takes the next history only once it has answered for the one before: the answer is for `now`.
  let now: { run: RunRef; events: Events } | undefined;
  async function* histories() {
    for (const run of runs) {
      const events: Events = [];
      for await (const e of runEvents(client, run.workflowId, run.runId, {})) events.push(e);
      now = { run, events };
      yield { workflowId: run.workflowId, history: { events } };
    }
  }
  const results = Worker.runReplayHistories(
    { workflowBundle: { code: build.code }, sinks: silentSpanSinks(), replayName: 'starry-replay-gate' },
    histories(),
  );
  for await (const result of results) {
    const events = now?.events ?? [];
    const report: ReplayReport = {
      workflowId: result.workflowId,
      runId: now?.run.runId ?? result.runId,
      workflowType: now?.run.type ?? typeOf(events),
      events: events.length,
      ok: true,
    };
    if (result.error) failed(report, result.error, events);
    now = undefined;
    yield report;
  }
}

function typeOf(events: Events): string {
  return events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? '?';
}

/** One line for a report: ok, or FAILED with the first bad event and the replayer's message. */
export function reportLine(r: ReplayReport): string {
  const what = `${r.workflowId} run ${r.runId ?? '?'} (${r.workflowType ?? '?'}, ${r.events} events)`;
  if (r.ok) return `ok      ${what}`;
  const event = r.firstBadEvent ? ` at event #${r.firstBadEvent.eventId} ${r.firstBadEvent.eventType}` : '';
  return `FAILED  ${what}: nondeterministic${event}: ${r.error ?? ''}`;
}
