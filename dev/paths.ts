/** Where the project's local files live, whether running from TypeScript sources or compiled `lib/`. */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

let root: string | undefined;

/** The project root: the nearest folder above this file whose package.json is ours. */
export function projectRoot(): string {
  if (root) return root;
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg) && JSON.parse(readFileSync(pkg, 'utf8')).name === 'openstarry-temporal') return (root = dir);
  }
  throw new Error(`cannot find the openstarry-temporal project root above ${__dirname}`);
}

/** The Temporal CLI installed by scripts/setup.sh (override with TEMPORAL_CLI). */
export function temporalCliPath(): string {
  return process.env.TEMPORAL_CLI ?? path.join(projectRoot(), '.tools', 'temporal', 'bin', 'temporal');
}

/**
 * The git-ignored folder for the dev server's SQLite file, logs, pid and (without a bucket) transcript
 * blobs: `.temporal/` in the project, or in the working directory when the package is installed as a
 * dependency (inside node_modules it would be wiped by the next `npm ci`).
 */
export function stateDir(): string {
  if (process.env.STARRY_STATE_DIR) return process.env.STARRY_STATE_DIR;
  return path.join(localBase(), '.temporal');
}

/**
 * The workspace root of a worker whose operator names none (no `STARRY_WORKER_POLICY`, no
 * `STARRY_WORKSPACE_ROOTS`): `workspaces/` in the project (git-ignored but for the examples' own), or in
 * the working directory when the package is installed as a dependency. A folder of its own, never the
 * project folder: tasks write anywhere under their roots, and the project holds the worker's code.
 */
export function defaultWorkspaceRoot(): string {
  return path.join(localBase(), 'workspaces');
}

/** The project, or the working directory when the package is installed as a dependency (inside node_modules a folder would be wiped by the next `npm ci`). */
function localBase(): string {
  const root = projectRoot();
  return root.split(path.sep).includes('node_modules') ? process.cwd() : root;
}
