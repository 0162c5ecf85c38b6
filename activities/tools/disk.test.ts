/**
 * What a task's files take on disk (issue 52), against the real sandbox and the real file system: every
 * entry counts (a directory, an empty file), a flood of them is stopped at the workspace's cap while
 * the program runs, `fs.write` counts the directories it creates, a tree deeper than PATH_MAX hides
 * nothing, and the workspaces of one tenant are bounded together (`limits.tenantBytes`) while another
 * tenant's are not touched.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, constants, promises as fs, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { SandboxLimits } from '../../core/worker-policy';
import { measureTree } from './disk';
import { runTool } from './index';
import { makeWorkspace, testPolicy, toolsConfig, type TempWorkspace } from './test-support';

const KiB = 1024;
const SHELL = ['sh', 'ls'];

let ws: TempWorkspace;
beforeEach(async () => {
  ws = await makeWorkspace();
});
// rm, not fs.rm: a tree deeper than PATH_MAX is removed only by a walk through descriptors.
afterEach(() => execFileSync('rm', ['-rf', ws.base]));

/** A tool call in `workspace` under these limits, for `tenant` (none: a plain agent). */
function call(
  name: string,
  args: Record<string, unknown>,
  limits: Partial<SandboxLimits>,
  o: { workspace?: string; tenant?: string } = {},
) {
  return runTool(
    {
      name,
      args,
      tick: 1,
      workspace: [o.workspace ?? ws.root],
      tools: toolsConfig({ shellAllow: SHELL }),
      toolTimeoutMs: 60_000,
    },
    undefined,
    {
      policy: testPolicy(ws, { shellAllow: SHELL, limits }),
      ...(o.tenant !== undefined ? { tenant: o.tenant } : {}),
    },
  );
}
const sh = (script: string, limits: Partial<SandboxLimits>, o: { workspace?: string; tenant?: string } = {}) =>
  call('shell.run', { command: 'sh', args: ['-c', script] }, limits, o);
const write = (
  file: string,
  content: string,
  limits: Partial<SandboxLimits>,
  o: { workspace?: string; tenant?: string } = {},
) => call('fs.write', { path: file, content }, limits, o);

/** Entries below `dir` (`find` walks any depth). */
function entriesBelow(dir: string): number {
  return execFileSync('find', [dir, '-mindepth', '1'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    .split('\n')
    .filter(Boolean).length;
}

describe('a flood of entries in shell.run', () => {
  // 1 MiB holds 256 entries; unwatched, each flood makes 100,000 of them (400 MB on ext4).
  const limits = { workspaceBytes: 1024 * KiB };

  it.each([
    ['directories', 'mkdir $(seq 100000)'],
    ['empty files', 'touch $(seq 100000)'],
    // cd -P: the shell keeps no path of its own, so nothing but the cap stops the nesting.
    ['nested directories', 'while mkdir d && cd -P d; do :; done'],
  ])('stops a flood of %s while it runs, as E_LIMIT naming the workspace’s cap', async (_what, script) => {
    const result = await sh(script, limits);
    expect(result.error).toMatchObject({ code: 'E_LIMIT', kind: 'execution', source: 'shell.run' });
    expect(result.error?.message).toMatch(
      /^E_LIMIT: 'sh' was stopped: the workspace holds (more than )?\d+ bytes, over the workspace's disk limit \(limits\.workspaceBytes: 1 MiB for all its files and directories\)/,
    );
    // Stopped near the cap: the program ran until a measure saw it over, not to its end.
    const made = entriesBelow(ws.root);
    expect(made).toBeGreaterThan(256);
    expect(made).toBeLessThan(20_000);
  });

  it('lets a program run in a workspace over its cap, and stops one that grows it further', async () => {
    for (let i = 0; i < 300; i++) mkdirSync(path.join(ws.root, `d${i}`));
    expect((await sh('ls d1', limits)).data).toMatchObject({ exitCode: 0 });
    const grown = await sh('mkdir $(seq 100000)', limits);
    expect(grown.error?.message).toMatch(
      /^E_LIMIT: 'sh' was stopped: the workspace holds (more than )?\d+ bytes, over/,
    );
  });
});

describe('fs.write counts the directories it creates', () => {
  const limits = { workspaceBytes: 64 * KiB };

  it('refuses the empty file whose directories would pass the cap, after the ones that fit', async () => {
    // Each write makes two directories and an empty file: three blocks, 12 KiB; five fit in 64 KiB.
    for (let i = 0; i < 5; i++) expect((await write(`d${i}/e/f.txt`, '', limits)).success).toBe(true);
    const refused = await write('d5/e/f.txt', '', limits);
    expect(refused.error).toMatchObject({ code: 'E_LIMIT', kind: 'execution', source: 'fs.write' });
    expect(refused.error?.message).toBe(
      "E_LIMIT: writing 'd5/e/f.txt' (0 bytes) would take the workspace from 61440 to 73728 bytes, over the workspace's disk limit (limits.workspaceBytes: 64 KiB for all its files and directories)",
    );
    await expect(fs.stat(path.join(ws.root, 'd5'))).rejects.toThrow('ENOENT');
  });

  it('refuses a deep path at once, creating nothing', async () => {
    const deep = `${Array.from({ length: 100 }, () => 'n').join('/')}/f.txt`;
    const refused = await write(deep, '', limits);
    expect(refused.error?.message).toContain('would take the workspace from 0 to 413696 bytes, over');
    expect(entriesBelow(ws.root)).toBe(0);
  });
});

/**
 * Directories `depth` deep below `root`, each named `name` and (`fileEvery` > 0) every `fileEvery`th holding a file of a
 * block beside it, made through descriptors (paths longer than PATH_MAX).
 */
function deepTree(root: string, depth: number, name: string, fileEvery = 0): string {
  let fd = openSync(root, constants.O_RDONLY | constants.O_DIRECTORY);
  for (let i = 0; i < depth; i++) {
    if (fileEvery > 0 && i % fileEvery === 0) writeFileSync(`/proc/self/fd/${fd}/side.txt`, 'x');
    mkdirSync(`/proc/self/fd/${fd}/${name}`);
    const next = openSync(`/proc/self/fd/${fd}/${name}`, constants.O_RDONLY | constants.O_DIRECTORY);
    closeSync(fd);
    fd = next;
  }
  return `/proc/self/fd/${fd}`;
}

describe('a tree deeper than PATH_MAX', () => {
  it('is counted to its bottom: no depth hides a file from the caps', async () => {
    const bottom = deepTree(ws.root, 500, 'x'.repeat(20)); // 10,500 characters of path
    const fd = Number(bottom.split('/').pop());
    await fs.writeFile(`${bottom}/hidden.bin`, Buffer.alloc(1024 * KiB));
    closeSync(fd);
    const usage = await measureTree([ws.root], { source: 'test' });
    expect(usage).toEqual({ bytes: 500 * 4096 + 1024 * KiB, entries: 501, complete: true });
    const refused = await write('more.txt', 'x', { workspaceBytes: 2 * 1024 * KiB });
    expect(refused.error?.message).toContain(`would take the workspace from ${500 * 4096 + 1024 * KiB} to`);
  });

  it('is counted with a file beside the way down, and counted as entries alone', async () => {
    closeSync(Number(deepTree(ws.root, 3000, 'd', 10).split('/').pop()));
    expect(await measureTree([ws.root], { source: 'test' })).toEqual({
      bytes: 3300 * 4096,
      entries: 3300,
      complete: true,
    });
    const quick = await measureTree([ws.root], { source: 'test', entriesOnly: true, stopAbove: 1000 * 4096 });
    expect(quick).toMatchObject({ entries: 1001, complete: false });
  });
});

describe('the workspaces of a tenant, bounded together', () => {
  // Each agent's 150 KiB file fits its own workspace (192 KiB); two of one tenant pass the tenant's 256 KiB.
  const limits = { workspaceBytes: 192 * KiB, tenantBytes: 256 * KiB };
  const content = 'x'.repeat(150 * KiB);
  const workspaceOf = async (tenant: string, agent: string) => {
    const dir = path.join(ws.base, tenant, agent);
    await fs.mkdir(dir, { recursive: true });
    return dir;
  };

  it('refuses the second agent’s write naming the tenant’s cap, while another tenant still writes', async () => {
    const [a1, a2, b1] = [
      await workspaceOf('acme', 'a1'),
      await workspaceOf('acme', 'a2'),
      await workspaceOf('beta', 'b1'),
    ];
    expect((await write('big.txt', content, limits, { workspace: a1, tenant: 'acme' })).success).toBe(true);
    const second = await write('big.txt', content, limits, { workspace: a2, tenant: 'acme' });
    expect(second.error).toMatchObject({ code: 'E_LIMIT', kind: 'execution', source: 'fs.write' });
    // acme's space: its two workspace directories (a block each) and a1's file (38 blocks).
    expect(second.error?.message).toBe(
      "E_LIMIT: writing 'big.txt' (153600 bytes) would take the workspaces of tenant acme from 163840 to 319488 bytes, over the tenant's disk limit (limits.tenantBytes: 256 KiB for all the workspaces of tenant acme together)",
    );
    expect(second.error?.suggestion).toContain('another agent of tenant acme');
    await expect(fs.stat(path.join(a2, 'big.txt'))).rejects.toThrow('ENOENT');
    expect((await write('big.txt', content, limits, { workspace: b1, tenant: 'beta' })).success).toBe(true);
  });

  it('stops a program of the tenant at the room its space has left, naming the tenant’s cap', async () => {
    const a1 = await workspaceOf('acme', 'a1');
    expect((await write('big.txt', content, limits, { workspace: a1, tenant: 'acme' })).success).toBe(true);
    const a2 = await workspaceOf('acme', 'a2');
    const result = await sh('head -c 150K /dev/zero > big.bin', limits, { workspace: a2, tenant: 'acme' });
    expect(result.error?.message).toMatch(
      /^E_LIMIT: 'sh' (hit|was stopped: the workspaces of tenant acme hold \d+ bytes, over) the tenant's disk limit \(limits\.tenantBytes: 256 KiB for all the workspaces of tenant acme together\)/,
    );
    // The room left was the tenant's: 256 KiB less a1's file.
    expect((await fs.stat(path.join(a2, 'big.bin'))).size).toBeLessThanOrEqual(256 * KiB - 155_648);
  });

  it('counts a plain agent’s workspace in everything under the roots', async () => {
    await write('big.txt', content, limits, { workspace: await workspaceOf('acme', 'a1'), tenant: 'acme' });
    const plain = await write('big.txt', content, limits);
    // ws/, outside/, acme/, acme/a1/ and a1's file.
    expect(plain.error?.message).toContain(
      "would take the workspaces under the worker's roots from 172032 to 327680 bytes, over the disk limit of the worker's roots (limits.tenantBytes: 256 KiB for all the workspaces under them together)",
    );
  });
});
