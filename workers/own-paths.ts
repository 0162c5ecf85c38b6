/**
 * What the worker loads, runs or keeps, by real path, and the start-time refusal of roots that overlap
 * it (the rule is `rootConflicts` in core/own-paths.ts; docs/ARCHITECTURE.md, "Trust boundary").
 */
import { mkdirSync, promises as fs } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../core/errors';
import { ownPathsRefusal, rootConflicts, type OwnPath, type RootsOrigin } from '../core/own-paths';
import type { WorkerPolicy } from '../core/worker-policy';
import { journalDirOf } from '../activities/tools/call-journal';
import { defaultWorkspaceRoot, projectRoot, stateDir, temporalCliPath } from '../dev/paths';

/** A file the worker read its settings or credentials from, by the variable that named it. */
export interface SettingsFile {
  what: string;
  path: string;
}

/** What a worker holds besides its package: its stores, bundle, plugins, settings files. */
export interface OwnPathsInput {
  policy: Pick<WorkerPolicy, 'journalDir'>;
  /** The local directory of its content store (none for S3). */
  storeDir?: string;
  workflowBundlePath?: string;
  /** The files its plugin modules resolved to. */
  pluginFiles?: readonly string[];
  /** Its policy, price table, TLS and cloud credential files. */
  files?: readonly SettingsFile[];
  /** Where node-llama-cpp is installed (`STARRY_LLAMA_RUNTIME`). */
  llamaRuntime?: string;
}

/** The system's programs and configuration: what bwrap, setpriv and prlimit are, and what every process reads. */
const SYSTEM_DIRS = ['/bin', '/boot', '/dev', '/etc', '/lib', '/lib32', '/lib64', '/proc', '/sbin', '/sys', '/usr'];

/**
 * Every path of the worker's own, each by its real path (a missing one by its nearest existing
 * ancestor's): its package (whose `workspaces/` folder roots may use), the packages and Node.js it runs
 * on, its entry point, its local tools, the dev server's state, its stores, bundle, plugins, settings
 * and credential files, and the system's programs.
 *
 * ```ts
 * const own = await workerOwnPaths({ policy, storeDir: '/app/.temporal/blobs' });
 * ```
 */
export async function workerOwnPaths(input: OwnPathsInput): Promise<OwnPath[]> {
  const pkg = projectRoot();
  const listed: Array<OwnPath | undefined> = [
    { path: pkg, what: "the worker's code and packages", rootsMayLieIn: defaultWorkspaceRoot() },
    { path: packagesDir(), what: "the worker's packages (node_modules)" },
    { path: process.execPath, what: 'the Node.js it runs on' },
    process.argv[1] ? { path: path.dirname(process.argv[1]), what: "the worker's entry point" } : undefined,
    { path: path.join(pkg, '.tools'), what: "the worker's tools (.tools: the Temporal CLI, the local model runtime)" },
    input.llamaRuntime ? { path: input.llamaRuntime, what: 'the local model runtime' } : undefined,
    process.env.TEMPORAL_CLI ? { path: temporalCliPath(), what: 'the Temporal CLI' } : undefined,
    { path: stateDir(), what: "the dev server's database and the worker's state (.temporal)" },
    input.storeDir ? { path: input.storeDir, what: 'the transcript store' } : undefined,
    { path: journalDirOf(input.policy), what: 'the tool call journal' },
    input.workflowBundlePath ? { path: input.workflowBundlePath, what: 'the workflow bundle' } : undefined,
    ...(input.pluginFiles ?? []).map((file) => ({ path: path.dirname(file), what: `a plugin module (${file})` })),
    ...(input.files ?? []),
    ...credentialDirs(),
    ...SYSTEM_DIRS.map((dir) => ({ path: dir, what: "the system's programs and configuration" })),
  ];
  const own = listed.filter((o): o is OwnPath => o !== undefined);
  return Promise.all(
    own.map(async (o) => ({
      ...o,
      path: await realpathOrNearest(path.resolve(o.path)),
      ...(o.rootsMayLieIn ? { rootsMayLieIn: await realpathOrNearest(o.rootsMayLieIn) } : {}),
    })),
  );
}

/**
 * Refuse to start when a root overlaps a path of the worker's own; make the default root when the roots
 * are the default (a folder of the package's, or of the working directory's when installed).
 *
 * ```ts
 * await checkRootsOwnNothing(config.policy, await workerOwnPaths({ policy: config.policy }), 'STARRY_WORKSPACE_ROOTS');
 * ```
 * @throws ConfigError naming each overlap and what to do.
 */
export async function checkRootsOwnNothing(
  policy: Pick<WorkerPolicy, 'roots'>,
  own: readonly OwnPath[],
  from: RootsOrigin,
): Promise<void> {
  if (from === 'the default') for (const root of policy.roots) mkdirSync(root, { recursive: true, mode: 0o755 });
  const roots = await Promise.all(policy.roots.map((r) => realpathOrNearest(r)));
  const refusal = ownPathsRefusal(rootConflicts(roots, own), from);
  if (refusal) throw new ConfigError(refusal);
}

/** What a worker that runs tool calls checks at start, before it loads a plugin or connects. */
export interface WorkerRootsCheck extends Omit<OwnPathsInput, 'storeDir' | 'pluginFiles'> {
  policy: Pick<WorkerPolicy, 'roots' | 'journalDir'>;
  /** Where its roots were set; absent: the default. */
  rootsFrom?: RootsOrigin;
  /** Its content store (a local one's directory is its own). */
  store?: { dir?: string };
  /** Its plugin modules as named (resolved here, not loaded). */
  plugins?: readonly string[];
}

/**
 * Refuse to start a worker that runs tool calls on roots overlapping what it loads, runs or keeps.
 *
 * ```ts
 * await checkWorkerRoots({ policy: config.policy, rootsFrom: config.rootsFrom, store: storeFromEnv() });
 * ```
 * @throws ConfigError naming each overlap.
 */
export async function checkWorkerRoots(check: WorkerRootsCheck): Promise<void> {
  const { rootsFrom = 'the default', store, plugins = [], ...input } = check;
  const own = await workerOwnPaths({
    ...input,
    ...(store?.dir ? { storeDir: store.dir } : {}),
    pluginFiles: plugins.flatMap((spec) => {
      try {
        return [createRequire(path.join(process.cwd(), 'plugins.js')).resolve(spec)];
      } catch {
        return []; // loadPlugins says it is missing
      }
    }),
  });
  await checkRootsOwnNothing(check.policy, own, rootsFrom);
}

/** The `node_modules` folder the worker's packages load from (`@temporalio/worker`'s). */
function packagesDir(): string {
  const entry = require.resolve('@temporalio/worker');
  const at = entry.lastIndexOf(`${path.sep}node_modules${path.sep}`);
  return at < 0 ? path.dirname(entry) : entry.slice(0, at + '/node_modules'.length);
}

/** The folders the AWS and Google SDKs read credentials from (a root may hold neither, whether they exist yet or not). */
function credentialDirs(): OwnPath[] {
  const home = os.homedir();
  return [
    { path: path.join(home, '.aws'), what: 'the AWS credentials (~/.aws)' },
    { path: path.join(home, '.config', 'gcloud'), what: 'the Google Cloud credentials (~/.config/gcloud)' },
  ];
}

/** The real path of `p`, or (when missing) its nearest existing ancestor's real path joined with the rest. */
export async function realpathOrNearest(p: string): Promise<string> {
  try {
    return await fs.realpath(p);
  } catch {
    const parent = path.dirname(p);
    return parent === p ? p : path.join(await realpathOrNearest(parent), path.basename(p));
  }
}
