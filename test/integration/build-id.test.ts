/**
 * One commit is one version (docs/ARCHITECTURE.md#versioning): the same sources and dependencies give the
 * same build id in any directory. The bundle used to name its modules by where the checkout lay, so two
 * clones of one commit never shared a version. Here the package built in this folder (`npm run build`'s
 * lib/workflow-bundle.js) and the same build bundled again from a copy at another path, deeper, with its
 * node_modules a symlink, give one build id.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import { buildIdOf } from '../../workers/versioning';
import { privateDir } from '../helpers/harness';

jest.setTimeout(180_000);

it('is the same for the same code bundled in another directory', () => {
  const copy = path.join(privateDir('starry-build-id'), 'another', 'checkout');
  mkdirSync(copy, { recursive: true });
  for (const part of ['lib', 'package.json'])
    cpSync(path.join(projectRoot(), part), path.join(copy, part), { recursive: true });
  symlinkSync(path.join(projectRoot(), 'node_modules'), path.join(copy, 'node_modules'));
  // The copy bundles its own compiled workflows, as `npm run build` does (scripts/bundle-workflows.js).
  const script = `
    const { bundleWorkflowCode } = require('@temporalio/worker');
    const { workflowBundleOptions } = require('./lib/workers/bundle');
    const { buildIdOf } = require('./lib/workers/versioning');
    const noop = () => undefined;
    const logger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: console.error };
    bundleWorkflowCode({ ...workflowBundleOptions(), logger }).then(({ code }) => process.stdout.write(buildIdOf(code)));`;
  const there = execFileSync(process.execPath, ['-e', script], { cwd: copy, encoding: 'utf8' });
  const here = buildIdOf(readFileSync(path.join(projectRoot(), 'lib', 'workflow-bundle.js'), 'utf8'));
  expect(there).toMatch(/^\d+\.\d+\.\d+-[0-9a-f]{12}$/);
  expect(there).toBe(here);
});
