/**
 * `starry versions` and `starry promote` (docs/ARCHITECTURE.md#rolling-out-a-new-build): a deployment's
 * versions and what still runs on each; a new build made current or ramping once the current version's
 * recent histories replay on its code (the replay gate, also `starry replay --recent N`).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { temporalEnv } from '../../client/connection';
import { currentBuild, listVersions, recentRuns, route, routingToken } from '../../client/deployment';
import { checkPromotion, formatVersions, gateRefusal, parseRamp, parseRecent } from '../../core/rollout';
import type { ReplayReport } from '../../dev/replay';
import type { Build } from '../../dev/replay-gate';
import { DEPLOYMENT_NAME, wakeOlderAgents } from '../../workers/versioning';
import { EXIT, ExitError, sayErr, withClient } from '../common';
import { jsonLine, say } from '../format';

/** The deployment the commands act on: STARRY_DEPLOYMENT_NAME, as the workers join it, or `openstarry`. */
export const deploymentName = (): string => process.env.STARRY_DEPLOYMENT_NAME || DEPLOYMENT_NAME;

/** Histories of each workflow type the gate replays unless told. */
export const DEFAULT_RECENT = '10';

/** A number flag checked by `parse`, or a usage error with its message. */
export function numberFlag(text: string, parse: (t: string) => number | { error: string }): number {
  const n = parse(text);
  if (typeof n !== 'number') throw new ExitError(n.error, EXIT.USAGE);
  return n;
}

/** Register versions and promote. */
export function rolloutCommands(program: Command): void {
  program
    .command('versions')
    .description(
      "the deployment's versions: build id, status (current, ramping, draining, drained, inactive), pollers, and the agents, tasks and budgets still pinned to each",
    )
    .option('--json', 'print the versions as JSON')
    .action(async (o: { json?: boolean }) => {
      const { namespace } = temporalEnv();
      const rows = await withClient((agents) => listVersions(agents.client, namespace, deploymentName()));
      say(o.json ? jsonLine({ deployment: deploymentName(), versions: rows }) : formatVersions(deploymentName(), rows));
    });

  program
    .command('promote')
    .description(
      "make a build the deployment's current version (or ramp it), once the current version's recent histories replay on its code",
    )
    .argument('[buildId]', "the version to promote; default this checkout's build")
    .option('--ramp <pct>', 'send this percentage (0-100) of new agents and tasks to it instead of making it current')
    .option('--recent <n>', 'histories of each workflow type to replay', DEFAULT_RECENT)
    .option('--bundle <file>', "the build's workflow bundle (its lib/workflow-bundle.js); default this checkout's")
    .action(promote);
}

/** `starry promote`: the checks, the replay gate against the current version, then the routing. */
async function promote(buildId: string | undefined, o: { ramp?: string; recent: string; bundle?: string }) {
  const ramp = o.ramp === undefined ? undefined : numberFlag(o.ramp, parseRamp);
  const recent = numberFlag(o.recent, parseRecent);
  const build = await loadBuild(o.bundle);
  const { namespace, address } = temporalEnv();
  const deployment = deploymentName();
  await withClient(async (agents) => {
    // Read first: what the gate checks against must still be the routing when it changes.
    const conflictToken = await routingToken(agents.client.connection, namespace, deployment);
    const versions = await listVersions(agents.client, namespace, deployment);
    const checked = checkPromotion(
      {
        deployment,
        localBuildId: build.buildId,
        ...(buildId ? { buildId } : {}),
        ...(ramp !== undefined ? { ramp } : {}),
      },
      versions,
    );
    if (!checked.ok) throw new ExitError(`cannot promote on ${address}: ${checked.reason}`, EXIT.FAILED);
    if (checked.current) {
      const bad = await replayGate(agents.client, deployment, checked.current.buildId, recent, build);
      if (bad.length) throw new ExitError(gateRefusal(build.buildId, checked.current.buildId, bad), EXIT.FAILED);
    }
    await route(agents.client.connection, namespace, deployment, build.buildId, {
      ...(ramp !== undefined ? { ramp } : {}),
      conflictToken,
    }).catch((err: unknown) => {
      // FAILED_PRECONDITION or ABORTED: the token no longer matches.
      if (![9, 10].includes((err as { code?: number }).code ?? 0)) throw err;
      throw new ExitError(
        `the routing of deployment ${deployment} changed while the gate ran (${(err as Error).message}); nothing was promoted: check \`starry versions\` and run \`starry promote\` again`,
        EXIT.FAILED,
      );
    });
    const version = { deploymentName: deployment, buildId: build.buildId };
    if (ramp !== undefined) {
      say(`${build.buildId} is ramping: it gets ${ramp}% of new agents and tasks of deployment ${deployment}\n`);
      return;
    }
    say(
      `${build.buildId} is the current version of deployment ${deployment}${checked.current ? ` (was ${checked.current.buildId}): new agents and tasks run on it, tasks pinned to ${checked.current.buildId} finish there, agents move at their next continue-as-new. Stop the old workers once \`starry versions\` shows nothing on ${checked.current.buildId}` : ''}\n`,
    );
    if (checked.current)
      await wakeOlderAgents(agents.client.connection, namespace, version, {
        info: (m) => sayErr(`${m}\n`),
        warn: (m) => sayErr(`starry: ${m}\n`),
      });
  });
}

/** This checkout's build, or the one `--bundle` names. */
export async function loadBuild(bundle?: string): Promise<Build> {
  if (bundle && !existsSync(bundle))
    throw new ExitError(
      `--bundle ${bundle}: no such file. Give the workflow bundle of the build to check, its lib/workflow-bundle.js (\`npm run build\` writes it)`,
      EXIT.USAGE,
    );
  (await import('../../dev/embedded')).quietRuntime('ERROR');
  const { thisBuild } = await import('../../dev/replay-gate');
  return thisBuild(bundle ? path.resolve(bundle) : undefined);
}

/**
 * Replay the `recent` most recent histories of each workflow type of version `buildId` against `build`,
 * printing a line for each on stderr; returns the ones that failed.
 */
export async function replayGate(
  client: Client,
  deployment: string,
  buildId: string,
  recent: number,
  build: Build,
  json = false,
): Promise<ReplayReport[]> {
  const { replayRuns, reportLine } = await import('../../dev/replay-gate');
  const runs = await recentRuns(client, deployment, buildId, recent);
  sayErr(`replaying ${runs.length} recent histories of version ${buildId} against build ${build.buildId}\n`);
  const bad: ReplayReport[] = [];
  for await (const r of replayRuns(client, runs, build)) {
    if (!r.ok) bad.push(r);
    if (json) say(jsonLine(r));
    else sayErr(`${reportLine(r)}\n`);
  }
  return bad;
}

/** `starry replay --recent N`: the gate alone, against the current version. */
export async function replayRecent(text: string, bundle: string | undefined, json: boolean): Promise<void> {
  const recent = numberFlag(text, parseRecent);
  const build = await loadBuild(bundle);
  const { namespace, address } = temporalEnv();
  const deployment = deploymentName();
  await withClient(async (agents) => {
    const current = await currentBuild(agents.client.connection, namespace, deployment);
    if (!current)
      throw new ExitError(
        `deployment ${deployment} on ${address} has no current version: there is nothing to replay yet (\`starry versions\` lists its versions)`,
        EXIT.FAILED,
      );
    const bad = await replayGate(agents.client, deployment, current, recent, build, json);
    if (bad.length) {
      sayErr(
        `starry: ${bad.length} recent ${bad.length === 1 ? 'history' : 'histories'} of version ${current} do not replay on build ${build.buildId}\n`,
      );
      process.exitCode = EXIT.FAILED;
    } else if (!json) say(`replay ok: the recent histories of version ${current} replay on build ${build.buildId}\n`);
  });
}
