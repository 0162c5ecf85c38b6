import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { runTool, type ToolRequest } from './index';
import { makeWorkspace, toolsConfig, type TempWorkspace } from './test-support';

describe('fs tools', () => {
  let ws: TempWorkspace;
  const call = (name: string, args: unknown, overrides: Partial<ToolRequest> = {}) =>
    runTool({ name, args, tick: 1, workspace: [ws.root], tools: toolsConfig(), toolTimeoutMs: 10_000, ...overrides });

  beforeEach(async () => {
    ws = await makeWorkspace();
    await fs.writeFile(path.join(ws.outside, 'secret.txt'), 'secret');
  });
  afterEach(() => ws.cleanup());

  it('refuses to read /root/secret.txt with EPERM naming the permitted roots', async () => {
    const result = await call('fs.read', { path: '/root/secret.txt' });
    expect(result).toEqual({
      success: false,
      error: {
        code: 'EPERM',
        kind: 'execution',
        source: 'fs.read',
        message: `EPERM: operation not permitted, access outside the workspace: '/root/secret.txt'`,
        suggestion: `Permitted roots: ${ws.root}. Use fs.list to see what is inside.`,
      },
    });
  });

  it('refuses a ../ escape', async () => {
    const result = await call('fs.read', { path: '../outside/secret.txt' });
    expect(result.error?.code).toBe('EPERM');
  });

  it('refuses to read or write through a symlink that points outside, leaving the target untouched', async () => {
    await fs.symlink(path.join(ws.outside, 'secret.txt'), path.join(ws.root, 'link.txt'));
    expect((await call('fs.read', { path: 'link.txt' })).error?.code).toBe('EPERM');
    expect((await call('fs.write', { path: 'link.txt', content: 'pwned' })).error?.code).toBe('EPERM');
    expect(await fs.readFile(path.join(ws.outside, 'secret.txt'), 'utf8')).toBe('secret');
  });

  it('reads through a symlink that points inside', async () => {
    await fs.writeFile(path.join(ws.root, 'real.txt'), 'inside');
    await fs.symlink('real.txt', path.join(ws.root, 'alias.txt'));
    expect(await call('fs.read', { path: 'alias.txt' })).toMatchObject({ success: true, data: { content: 'inside' } });
  });

  it('refuses a NUL byte with EINVAL', async () => {
    expect((await call('fs.read', { path: 'a\0b' })).error).toMatchObject({ code: 'EINVAL', kind: 'execution' });
  });

  it('reports a missing file as ENOENT', async () => {
    expect((await call('fs.read', { path: 'missing.txt' })).error).toMatchObject({
      code: 'ENOENT',
      kind: 'execution',
      source: 'fs.read',
    });
  });

  it('reports reading a directory as EISDIR', async () => {
    await fs.mkdir(path.join(ws.root, 'dir'));
    const result = await call('fs.read', { path: 'dir' });
    expect(result.error).toMatchObject({ code: 'EISDIR', kind: 'execution' });
    expect(result.error?.suggestion).toContain('fs.list');
  });

  it('treats a missing workspace root as fatal', async () => {
    const result = await call('fs.read', { path: 'a.txt' }, { workspace: [path.join(ws.base, 'gone')] });
    expect(result.error).toMatchObject({ code: 'E_INTERNAL', kind: 'fatal' });
    expect(result.error?.message).toContain(path.join(ws.base, 'gone'));
  });

  it('writes then reads back, creating parent directories', async () => {
    const file = path.join(ws.root, 'notes', 'deep', 'todo.md');
    expect(await call('fs.write', { path: 'notes/deep/todo.md', content: 'héllo\n' })).toEqual({
      success: true,
      data: { path: file, bytes: 7, appended: false },
    });
    await call('fs.write', { path: 'notes/deep/todo.md', content: 'more', append: true });
    expect(await call('fs.read', { path: 'notes/deep/todo.md' })).toEqual({
      success: true,
      data: { path: file, content: 'héllo\nmore', bytes: 11, truncated: false },
    });
  });

  it('lists a directory sorted by name with types and sizes', async () => {
    await fs.writeFile(path.join(ws.root, 'b.txt'), '12345');
    await fs.writeFile(path.join(ws.root, 'a.txt'), '1');
    await fs.mkdir(path.join(ws.root, 'c-dir'));
    await fs.symlink('a.txt', path.join(ws.root, 'A-link'));
    const result = await call('fs.list', {});
    expect(result.success).toBe(true);
    const data = result.data as {
      path: string;
      entries: { name: string; type: string; size: number }[];
      truncated: boolean;
    };
    expect(data.path).toBe(ws.root);
    expect(data.truncated).toBe(false);
    expect(data.entries.map((e) => [e.name, e.type])).toEqual([
      ['A-link', 'symlink'],
      ['a.txt', 'file'],
      ['b.txt', 'file'],
      ['c-dir', 'dir'],
    ]);
    expect(data.entries.find((e) => e.name === 'b.txt')?.size).toBe(5);
  });

  it('reports listing a file as ENOTDIR and a path outside as EPERM', async () => {
    await fs.writeFile(path.join(ws.root, 'a.txt'), '1');
    expect((await call('fs.list', { path: 'a.txt' })).error?.code).toBe('ENOTDIR');
    expect((await call('fs.list', { path: ws.outside })).error?.code).toBe('EPERM');
  });

  it('cuts a listing that does not fit the output cap and says so', async () => {
    for (let i = 0; i < 50; i++) await fs.writeFile(path.join(ws.root, `file-${String(i).padStart(2, '0')}.txt`), '');
    const result = await call('fs.list', {}, { tools: toolsConfig({ maxOutputBytes: 500 }) });
    const data = result.data as { entries: { name: string }[]; total: number; truncated: boolean };
    expect(data.truncated).toBe(true);
    expect(data.total).toBe(50);
    expect(data.entries.length).toBeGreaterThan(0);
    expect(data.entries.length).toBeLessThan(50);
    expect(data.entries[0]?.name).toBe('file-00.txt');
  });

  it('refuses a file larger than the output cap with E_OUTPUT_TOO_LARGE suggesting maxBytes', async () => {
    await fs.writeFile(path.join(ws.root, 'big.txt'), 'x'.repeat(2000));
    const tools = toolsConfig({ maxOutputBytes: 1000 });
    const result = await call('fs.read', { path: 'big.txt' }, { tools });
    expect(result.error).toMatchObject({ code: 'E_OUTPUT_TOO_LARGE', kind: 'execution', source: 'fs.read' });
    expect(result.error?.suggestion).toContain('maxBytes');
    expect(result.error?.suggestion).toContain('1000');
  });

  it('reads a prefix when maxBytes is given', async () => {
    await fs.writeFile(path.join(ws.root, 'big.txt'), 'abcdefghij'.repeat(200));
    const result = await call(
      'fs.read',
      { path: 'big.txt', maxBytes: 10 },
      { tools: toolsConfig({ maxOutputBytes: 1000 }) },
    );
    expect(result.data).toMatchObject({ content: 'abcdefghij', bytes: 10, truncated: true });
  });

  it('reads a file of exactly the cap in full', async () => {
    await fs.writeFile(path.join(ws.root, 'exact.txt'), 'y'.repeat(1000));
    const result = await call('fs.read', { path: 'exact.txt' }, { tools: toolsConfig({ maxOutputBytes: 1000 }) });
    expect(result.data).toMatchObject({ bytes: 1000, truncated: false });
  });

  it('returns schema errors as data without touching the disk', async () => {
    expect((await call('fs.write', { path: 'x.txt' })).error).toMatchObject({ code: 'E_SCHEMA', kind: 'execution' });
    await expect(fs.access(path.join(ws.root, 'x.txt'))).rejects.toThrow();
  });
});
