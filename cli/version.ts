/**
 * `starry --version`: the package version and the build id its workers run as (workers/versioning.ts),
 * so a report or a deploy names the exact workflow code, not only the release.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../dev/paths';
import { buildIdOf } from '../workers/versioning';

/**
 * What `starry --version` prints: the package version, and the build id of the workflow bundle a worker
 * started here would run (STARRY_WORKFLOW_BUNDLE, else the prebuilt lib/workflow-bundle.js).
 *
 * ```ts
 * versionText() // 'starry 0.1.0 (build 0.1.0-3f9a0c1b2d4e)'
 * ```
 */
export function versionText(): string {
  const { version } = JSON.parse(readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as {
    version: string;
  };
  const bundle = process.env.STARRY_WORKFLOW_BUNDLE || path.join(__dirname, '..', 'workflow-bundle.js');
  const build = existsSync(bundle)
    ? `build ${buildIdOf(readFileSync(bundle, 'utf8'))}`
    : `no prebuilt workflow bundle at ${bundle}: a worker bundles the workflows at start, its build id follows from them; \`npm run build\` writes it`;
  return `starry ${version} (${build})`;
}
