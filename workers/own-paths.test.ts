import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../core/errors';
import { parseWorkerPolicy } from '../core/worker-policy';
import { projectRoot } from '../dev/paths';
import { checkWorkerRoots } from './own-paths';

let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'starry-own-')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The refusal a check throws, or undefined when the worker may start. */
async function refusal(check: Parameters<typeof checkWorkerRoots>[0]): Promise<string | undefined> {
  try {
    await checkWorkerRoots(check);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
}

describe('a worker that runs tool calls, at start: its roots and what it loads, runs or keeps', () => {
  it('refuses the project folder (its code), and a folder inside its code, naming the overlap', async () => {
    const rootsFrom = 'STARRY_WORKSPACE_ROOTS' as const;
    const pkg = realpathSync(projectRoot());
    expect(await refusal({ policy: parseWorkerPolicy({ roots: [projectRoot()] }), rootsFrom })).toContain(
      `  - ${pkg} contains the worker's code and packages (${pkg})`,
    );
    expect(
      await refusal({ policy: parseWorkerPolicy({ roots: [path.join(projectRoot(), 'activities')] }), rootsFrom }),
    ).toContain(`  - ${pkg}/activities lies inside the worker's code and packages (${pkg})`);
    // A symlink to the code is seen for what it is.
    symlinkSync(projectRoot(), path.join(dir, 'link'));
    expect(await refusal({ policy: parseWorkerPolicy({ roots: [path.join(dir, 'link')] }), rootsFrom })).toContain(
      `contains the worker's code and packages (${pkg})`,
    );
  });

  it('refuses roots that hold its content store, its call journal or its policy file', async () => {
    const roots = [path.join(dir, 'ws')];
    mkdirSync(roots[0]!);
    const policy = parseWorkerPolicy({ roots, journalDir: path.join(dir, 'ws', '.journal') });
    const message = await refusal({
      policy,
      rootsFrom: 'STARRY_WORKER_POLICY',
      store: { dir: path.join(dir, 'ws', 'blobs') },
      files: [{ what: 'its policy (STARRY_WORKER_POLICY)', path: path.join(dir, 'ws', 'policy.json') }],
    });
    expect(message).toContain(`  - ${dir}/ws contains the transcript store (${dir}/ws/blobs)`);
    expect(message).toContain(`  - ${dir}/ws contains the tool call journal (${dir}/ws/.journal)`);
    expect(message).toContain(`  - ${dir}/ws contains its policy (STARRY_WORKER_POLICY) (${dir}/ws/policy.json)`);
    expect(message).toMatch(/set the roots of STARRY_WORKER_POLICY to \/srv\/workspaces/);
  });

  it("refuses a root holding a plugin module's folder, the system's programs or the whole disk", async () => {
    const plugins = path.join(dir, 'plugins');
    mkdirSync(plugins);
    writeFileSync(path.join(plugins, 'guide.js'), 'module.exports = {};');
    const policy = parseWorkerPolicy({ roots: [dir], journalDir: path.join(os.tmpdir(), 'elsewhere') });
    expect(await refusal({ policy, plugins: [path.join(plugins, 'guide.js')] })).toContain(
      `contains a plugin module (${plugins}/guide.js)`,
    );
    expect(await refusal({ policy: parseWorkerPolicy({ roots: ['/usr/local'] }) })).toContain(
      "/usr/local lies inside the system's programs and configuration (/usr)",
    );
    expect(await refusal({ policy: parseWorkerPolicy({ roots: ['/'] }) })).toContain(
      "/ contains the worker's code and packages",
    );
  });

  it("starts on roots apart from all of it, and on the project's own workspaces folder, which it makes", async () => {
    const ws = path.join(dir, 'ws');
    mkdirSync(ws);
    expect(await refusal({ policy: parseWorkerPolicy({ roots: [ws] }), store: { dir: path.join(dir, 'blobs') } })).toBe(
      undefined,
    );
    const own = path.join(projectRoot(), 'workspaces', `own-paths-test-${process.pid}`);
    try {
      expect(await refusal({ policy: parseWorkerPolicy({ roots: [own] }), rootsFrom: 'the default' })).toBeUndefined();
      expect(existsSync(own)).toBe(true);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });
});
