/**
 * Escape corpus (first part): real tools, real files; a case escapes when the outside secret shows up in
 * a result or an outside file changes.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
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
  ];

  it.each(cases)('%s does not escape', async (_name, name, args) => {
    const result = await runTool({ name, args, tick: 1, workspace: [ws.root], tools: toolsConfig(), toolTimeoutMs: 10_000 }, undefined, { policy: testPolicy(ws) });
    expect(JSON.stringify(result)).not.toContain(SECRET);
    expect(JSON.stringify(result)).not.toContain('root:x:0:0');
    expect(await fs.readFile(path.join(ws.outside, 'secret.txt'), 'utf8')).toBe(SECRET);
  });

  it('a hardlink to an outside file is refused by fs.read, fs.write and shell.run', async () => {
    await fs.link(path.join(ws.outside, 'secret.txt'), path.join(ws.root, 'hl.txt'));
    for (const [name, args] of [['fs.read', { path: 'hl.txt' }], ['fs.write', { path: 'hl.txt', content: 'x' }], ['shell.run', { command: 'cat', args: ['hl.txt'] }]] as const) {
      const result = await runTool({ name, args, tick: 1, workspace: [ws.root], tools: toolsConfig(), toolTimeoutMs: 10_000 }, undefined, { policy: testPolicy(ws) });
      expect(result.error?.code).toBe('EPERM');
    }
    expect(await fs.readFile(path.join(ws.outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    await fs.unlink(path.join(ws.root, 'hl.txt'));
  });
});
