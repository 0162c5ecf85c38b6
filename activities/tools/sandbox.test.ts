import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { resolveInWorkspace, isInside } from './sandbox';
import { ToolError } from '../../core/errors/activity';
import { makeWorkspace, type TempWorkspace } from './test-support';

/** The NormalizedError a rejected resolution carries. */
async function errorOf(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (err) {
    if (ToolError.is(err)) return err.error;
    throw err;
  }
  throw new Error('expected a ToolError');
}

describe('resolveInWorkspace', () => {
  let ws: TempWorkspace;
  const read = { mustExist: true, source: 'fs.read' };
  const write = { mustExist: false, source: 'fs.write' };

  beforeEach(async () => {
    ws = await makeWorkspace();
    await fs.writeFile(path.join(ws.root, 'a.txt'), 'a');
    await fs.writeFile(path.join(ws.outside, 'secret.txt'), 'secret');
  });
  afterEach(() => ws.cleanup());

  it('resolves a relative path against the first root', async () => {
    await expect(resolveInWorkspace([ws.root], 'a.txt', read)).resolves.toBe(path.join(ws.root, 'a.txt'));
  });

  it('accepts an absolute path inside any root', async () => {
    await expect(resolveInWorkspace([ws.outside, ws.root], path.join(ws.root, 'a.txt'), read)).resolves.toBe(
      path.join(ws.root, 'a.txt'),
    );
  });

  it('refuses /root/secret.txt with EPERM and lists the permitted roots', async () => {
    const error = await errorOf(resolveInWorkspace([ws.root, ws.base], '/root/secret.txt', read));
    expect(error).toMatchObject({ code: 'EPERM', kind: 'execution', source: 'fs.read' });
    expect(error.message).toBe(`EPERM: operation not permitted, access outside the workspace: '/root/secret.txt'`);
    expect(error.suggestion).toBe(`Permitted roots: ${ws.root}, ${ws.base}. Use fs.list to see what is inside.`);
  });

  it('refuses a ../ escape with EPERM, also for a file that does not exist', async () => {
    expect(await errorOf(resolveInWorkspace([ws.root], '../outside/secret.txt', read))).toMatchObject({
      code: 'EPERM',
    });
    const missing = await errorOf(resolveInWorkspace([ws.root], '../outside/nothing.txt', write));
    expect(missing.code).toBe('EPERM');
    expect(missing.message).toContain('../outside/nothing.txt');
  });

  it('allows .. segments that stay inside', async () => {
    await fs.mkdir(path.join(ws.root, 'sub'));
    await expect(resolveInWorkspace([ws.root], 'sub/../a.txt', read)).resolves.toBe(path.join(ws.root, 'a.txt'));
  });

  it('refuses a symlink inside the workspace that points outside', async () => {
    await fs.symlink(path.join(ws.outside, 'secret.txt'), path.join(ws.root, 'link.txt'));
    expect(await errorOf(resolveInWorkspace([ws.root], 'link.txt', read))).toMatchObject({ code: 'EPERM' });
    expect(await errorOf(resolveInWorkspace([ws.root], 'link.txt', write))).toMatchObject({ code: 'EPERM' });
  });

  it('refuses a path through a symlinked directory that points outside', async () => {
    await fs.symlink(ws.outside, path.join(ws.root, 'out'));
    expect(await errorOf(resolveInWorkspace([ws.root], 'out/new/file.txt', write))).toMatchObject({ code: 'EPERM' });
  });

  it('refuses a dangling symlink whose target would be created outside', async () => {
    await fs.symlink(path.join(ws.outside, 'created.txt'), path.join(ws.root, 'dangling.txt'));
    expect(await errorOf(resolveInWorkspace([ws.root], 'dangling.txt', write))).toMatchObject({ code: 'EPERM' });
  });

  it('follows a dangling symlink that points inside to where the file will be', async () => {
    await fs.symlink('target.txt', path.join(ws.root, 'dangling.txt'));
    await expect(resolveInWorkspace([ws.root], 'dangling.txt', write)).resolves.toBe(path.join(ws.root, 'target.txt'));
  });

  it('allows a symlink inside the workspace that points inside, returning the target', async () => {
    await fs.symlink(path.join(ws.root, 'a.txt'), path.join(ws.root, 'alias.txt'));
    await expect(resolveInWorkspace([ws.root], 'alias.txt', read)).resolves.toBe(path.join(ws.root, 'a.txt'));
  });

  it.each([
    ['a NUL byte', 'a\0.txt'],
    ['an empty path', ''],
    ['a blank path', '   '],
    ['a path longer than PATH_MAX', 'x'.repeat(5000)],
  ])('refuses %s with EINVAL', async (_what, userPath) => {
    const error = await errorOf(resolveInWorkspace([ws.root], userPath, read));
    expect(error).toMatchObject({ code: 'EINVAL', kind: 'execution' });
    expect(error.message).toMatch(/^EINVAL: invalid path: /);
  });

  it('refuses a non-string path with EINVAL', async () => {
    const error = await errorOf(resolveInWorkspace([ws.root], 42 as unknown as string, read));
    expect(error.message).toContain('expected a string, got number');
  });

  it('reports a missing file as ENOENT when it must exist, and returns its path when it need not', async () => {
    const error = await errorOf(resolveInWorkspace([ws.root], 'missing.txt', read));
    expect(error).toMatchObject({
      code: 'ENOENT',
      kind: 'execution',
      message: `ENOENT: no such file or directory, 'missing.txt'`,
    });
    await expect(resolveInWorkspace([ws.root], 'new/dir/file.txt', write)).resolves.toBe(
      path.join(ws.root, 'new/dir/file.txt'),
    );
  });

  it('reports a file used as a directory as ENOTDIR', async () => {
    expect(await errorOf(resolveInWorkspace([ws.root], 'a.txt/child', write))).toMatchObject({ code: 'ENOTDIR' });
  });

  it('treats a missing workspace root as fatal and says which root to create', async () => {
    const missing = path.join(ws.base, 'nope');
    const error = await errorOf(resolveInWorkspace([ws.root, missing], 'a.txt', read));
    expect(error).toMatchObject({ code: 'E_INTERNAL', kind: 'fatal', source: 'fs.read' });
    expect(error.message).toContain(`'${missing}' does not exist`);
    expect(error.message).toMatch(/create it/i);
  });

  it('treats a relative or empty root list as fatal', async () => {
    expect(await errorOf(resolveInWorkspace(['ws'], 'a.txt', read))).toMatchObject({
      code: 'E_INTERNAL',
      kind: 'fatal',
    });
    expect(await errorOf(resolveInWorkspace([], 'a.txt', read))).toMatchObject({ code: 'E_INTERNAL', kind: 'fatal' });
  });
});

describe('isInside', () => {
  it('compares whole path segments', () => {
    expect(isInside('/ws', '/ws')).toBe(true);
    expect(isInside('/ws/a', '/ws')).toBe(true);
    expect(isInside('/ws/..a', '/ws')).toBe(true);
    expect(isInside('/wsx/a', '/ws')).toBe(false);
    expect(isInside('/a', '/ws')).toBe(false);
    expect(isInside('/anything', '/')).toBe(true);
  });
});
