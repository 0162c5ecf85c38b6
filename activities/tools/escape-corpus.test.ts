/**
 * Escape corpus: real tools, real files, the real sandbox; a case escapes when the outside secret (or
 * any process environment) shows up in a result, an outside file changes, or a file appears outside.
 * The check-then-use races are in escape-race.test.ts.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_SHELL_ALLOW } from '../../core/worker-policy';
import { runTool } from './index';
import { makeWorkspace, testPolicy, toolsConfig, type TempWorkspace } from './test-support';

const SECRET = 'SECRET-OUTSIDE-7f3a';

describe('escape corpus', () => {
  let ws: TempWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    await fs.writeFile(path.join(ws.outside, 'secret.txt'), SECRET);
    await fs.symlink(path.join(ws.outside, 'secret.txt'), path.join(ws.root, 'link.txt'));
    await fs.symlink(path.join(ws.outside, 'secret.txt'), path.join(ws.root, '-x'));
    await fs.symlink(ws.outside, path.join(ws.root, 'linkdir'));
    await fs.symlink('../outside/secret.txt', path.join(ws.root, 'rel.txt'));
    await fs.symlink('rel.txt', path.join(ws.root, 'chain.txt'));
    await fs.symlink(path.join(ws.outside, 'new-dangling.txt'), path.join(ws.root, 'dangling.txt'));
    await fs.symlink('loop-b', path.join(ws.root, 'loop-a'));
    await fs.symlink('loop-a', path.join(ws.root, 'loop-b'));
    await fs.mkdir(path.join(ws.root, 'sub'));
    await fs.symlink('../../outside', path.join(ws.root, 'sub', 'up'));
    await fs.mkdir(path.join(ws.base, 'ws-evil'));
    await fs.writeFile(path.join(ws.base, 'ws-evil', 'secret.txt'), SECRET);
  });
  afterAll(() => ws.cleanup());

  const cases: Array<[string, string, unknown]> = [
    ['dotdot', 'fs.read', { path: '../outside/secret.txt' }],
    ['symlink file', 'fs.read', { path: 'link.txt' }],
    ['symlink dir', 'fs.read', { path: 'linkdir/secret.txt' }],
    ['%2e', 'fs.read', { path: '%2e%2e/outside/secret.txt' }],
    ['unicode dots', 'fs.read', { path: '\u2024\u2024/outside/secret.txt' }],
    ['backslashes', 'fs.read', { path: '..\\outside\\secret.txt' }],
    ['sibling prefix', 'fs.read', { path: '../ws-evil/secret.txt' }],
    ['/proc/self/root', 'fs.read', { path: '/proc/self/root/etc/passwd' }],
    ['list symlink dir', 'fs.list', { path: 'linkdir' }],
    ['write via symlink', 'fs.write', { path: 'link.txt', content: 'x' }],
    ['cat -- -x', 'shell.run', { command: 'cat', args: ['--', '-x'] }],
    ['head -- -x', 'shell.run', { command: 'head', args: ['--', '-x'] }],
    ['grep -R', 'shell.run', { command: 'grep', args: ['-R', 'SECRET', '.'] }],
    ['ls -laRL', 'shell.run', { command: 'ls', args: ['-laRL', '.'] }],
    ['grep -f', 'shell.run', { command: 'grep', args: ['-f/etc/passwd', 'x'] }],
    // Symlinks of every shape.
    ['relative symlink', 'fs.read', { path: 'rel.txt' }],
    ['chained symlinks', 'fs.read', { path: 'chain.txt' }],
    ['relative symlinked dir in a subdir', 'fs.read', { path: 'sub/up/secret.txt' }],
    ['list relative symlinked dir', 'fs.list', { path: 'sub/up' }],
    ['cat chained symlink', 'shell.run', { command: 'cat', args: ['chain.txt'] }],
    ['cat through symlinked dir', 'shell.run', { command: 'cat', args: ['sub/up/secret.txt'] }],
    ['grep -R through relative links', 'shell.run', { command: 'grep', args: ['-R', 'SECRET', 'sub'] }],
    ['symlink loop', 'fs.read', { path: 'loop-a' }],
    ['cat symlink loop', 'shell.run', { command: 'cat', args: ['loop-a'] }],
    // Odd names.
    ['NUL in the path', 'fs.read', { path: 'notes.md\0../outside/secret.txt' }],
    ['NUL before dotdot', 'fs.read', { path: '\0/../../outside/secret.txt' }],
    ['long name', 'fs.read', { path: `${'a'.repeat(300)}/../../outside/secret.txt` }],
    ['long path', 'fs.read', { path: `${'d/'.repeat(3000)}../../outside/secret.txt` }],
    ['tilde', 'fs.read', { path: '~/../outside/secret.txt' }],
    ['$HOME', 'fs.read', { path: '$HOME/../outside/secret.txt' }],
    ['cat tilde', 'shell.run', { command: 'cat', args: ['~/../outside/secret.txt'] }],
    ['trailing dot segments', 'fs.read', { path: 'sub/./../../outside/./secret.txt' }],
    ['absolute outside', 'fs.read', { path: '/etc/passwd' }],
    ['cat absolute outside', 'shell.run', { command: 'cat', args: ['/etc/passwd'] }],
    // /proc and /dev views of the outside.
    ['/proc/self/cwd', 'fs.read', { path: '/proc/self/cwd/../outside/secret.txt' }],
    ['/proc/self/environ', 'fs.read', { path: '/proc/self/environ' }],
    ['/proc/1/environ', 'fs.read', { path: '/proc/1/environ' }],
    ['/dev/fd', 'fs.read', { path: '/dev/fd/0' }],
    ['cat /proc/1/environ', 'shell.run', { command: 'cat', args: ['/proc/1/environ'] }],
    ['cat the worker environ', 'shell.run', { command: 'cat', args: [`/proc/${process.pid}/environ`] }],
    ['cat /proc/self/root', 'shell.run', { command: 'cat', args: ['/proc/self/root/../outside/secret.txt'] }],
    ['grep -R /proc', 'shell.run', { command: 'grep', args: ['-Rs', 'SECRET-OUTSIDE', '/proc/self/cwd/..'] }],
  ];
  // Commands a worker operator may allow on purpose: they follow links or take paths from arguments.
  const widerCommands: Array<[string, string[]]> = [
    ['find -L', ['find', '-L', '.', '-name', 'secret.txt', '-exec', 'cat', '{}', ';']],
    ['find / ', ['find', '/', '-maxdepth', '3', '-name', 'secret.txt', '-exec', 'cat', '{}', ';']],
    ['tar through a symlinked dir', ['tar', '-chf', '-', 'sub/up']],
    ['cp out of the workspace', ['cp', 'notes.md', '../outside/secret.txt']],
    ['ln then cat', ['sh', '-c', 'ln -s ../outside/secret.txt l2 && cat l2']],
    ['sh reads the parent environ', ['sh', '-c', 'cat /proc/$PPID/environ; cat /proc/1/environ']],
  ];

  /** Nothing of the outside in the result, nothing changed or created outside. */
  async function expectNoEscape(result: unknown): Promise<void> {
    const text = JSON.stringify(result);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('root:x:0:0');
    // The worker's environment (its own PATH, jest's variables); the sandbox's minimal one is its own.
    expect(text).not.toContain(`PATH=${process.env.PATH}`);
    expect(text).not.toMatch(/JEST_WORKER_ID|NODE_OPTIONS|npm_config/);
    expect(await fs.readFile(path.join(ws.outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    expect((await fs.readdir(ws.outside)).sort()).toEqual(['secret.txt']);
  }

  it.each(cases)('%s does not escape', async (_name, name, args) => {
    const result = await runTool(
      { name, args, tick: 1, workspace: [ws.root], tools: toolsConfig(), toolTimeoutMs: 10_000 },
      undefined,
      { policy: testPolicy(ws) },
    );
    await expectNoEscape(result);
  });

  it.each(widerCommands)(
    '%s, allowed by the worker and the task, does not escape the sandbox',
    async (_name, [command, ...args]) => {
      const allow = [...DEFAULT_SHELL_ALLOW, 'find', 'tar', 'cp', 'sh', 'ln'];
      const result = await runTool(
        {
          name: 'shell.run',
          args: { command, args },
          tick: 1,
          workspace: [ws.root],
          tools: toolsConfig({ shellAllow: allow }),
          toolTimeoutMs: 10_000,
        },
        undefined,
        { policy: testPolicy(ws, { shellAllow: allow }) },
      );
      await expectNoEscape(result);
    },
  );

  it.each([
    ['a dangling symlink', 'dangling.txt'],
    ['a symlinked parent', 'linkdir/new.txt'],
    ['a relative symlinked parent', 'sub/up/new.txt'],
    ['a symlink loop', 'loop-a'],
  ])('fs.write through %s creates nothing outside and says why', async (_name, target) => {
    for (const append of [false, true]) {
      const result = await runTool(
        {
          name: 'fs.write',
          args: { path: target, content: SECRET, append },
          tick: 1,
          workspace: [ws.root],
          tools: toolsConfig(),
          toolTimeoutMs: 10_000,
        },
        undefined,
        { policy: testPolicy(ws) },
      );
      expect(result.error?.message).toMatch(/symlink|outside|loop|too many/i);
    }
    expect((await fs.readdir(ws.outside)).sort()).toEqual(['secret.txt']);
  });

  it('a hardlink to an outside file is refused by fs.read, fs.write and shell.run', async () => {
    await fs.link(path.join(ws.outside, 'secret.txt'), path.join(ws.root, 'hl.txt'));
    for (const [name, args] of [
      ['fs.read', { path: 'hl.txt' }],
      ['fs.write', { path: 'hl.txt', content: 'x' }],
      ['shell.run', { command: 'cat', args: ['hl.txt'] }],
    ] as const) {
      const result = await runTool(
        { name, args, tick: 1, workspace: [ws.root], tools: toolsConfig(), toolTimeoutMs: 10_000 },
        undefined,
        { policy: testPolicy(ws) },
      );
      expect(result.error?.code).toBe('EPERM');
    }
    expect(await fs.readFile(path.join(ws.outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    await fs.unlink(path.join(ws.root, 'hl.txt'));
  });
});
