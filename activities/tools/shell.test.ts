import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { runTool, type ToolRequest } from './index';
import { makeWorkspace, toolsConfig, type TempWorkspace } from './test-support';

describe('shell.run', () => {
  let ws: TempWorkspace;
  const call = (args: unknown, overrides: Partial<ToolRequest> = {}, signal?: AbortSignal) =>
    runTool(
      {
        name: 'shell.run',
        args,
        tick: 1,
        workspace: [ws.root],
        tools: toolsConfig(),
        toolTimeoutMs: 10_000,
        ...overrides,
      },
      signal,
    );

  beforeEach(async () => {
    ws = await makeWorkspace();
    await fs.writeFile(path.join(ws.outside, 'secret.txt'), 'secret');
  });
  afterEach(() => ws.cleanup());

  it('runs an allowed command and returns exit code, stdout and stderr', async () => {
    expect(await call({ command: 'echo', args: ['hello', 'world'] })).toEqual({
      success: true,
      data: { exitCode: 0, stdout: 'hello world\n', stderr: '' },
    });
  });

  it('accepts a simple command line without args', async () => {
    expect((await call({ command: 'echo  one two' })).data).toMatchObject({ stdout: 'one two\n' });
  });

  it('refuses a command that is not allowed with EPERM and lists the allow-list', async () => {
    const result = await call({ command: 'rm', args: ['-rf', '.'] });
    expect(result.error).toMatchObject({ code: 'EPERM', kind: 'execution', source: 'shell.run' });
    expect(result.error?.message).toContain("'rm'");
    expect(result.error?.suggestion).toContain('ls, cat, echo');
  });

  it('refuses a path to an allowed program that is not itself on the list', async () => {
    expect((await call({ command: '/bin/echo', args: ['x'] })).error?.code).toBe('EPERM');
  });

  it('refuses shell syntax in a command line, since no shell runs it', async () => {
    const result = await call({ command: 'cat a.txt | grep x' });
    expect(result.error).toMatchObject({ code: 'EINVAL', kind: 'execution' });
    expect(result.error?.suggestion).toContain('args');
  });

  it('reports a non-zero exit code as a successful result the model can read', async () => {
    const result = await call({ command: 'ls', args: ['does-not-exist'] });
    expect(result.success).toBe(true);
    const data = result.data as { exitCode: number; stderr: string };
    expect(data.exitCode).not.toBe(0);
    expect(data.stderr).toContain('does-not-exist');
  });

  it('runs in the first root by default and in a cwd inside the workspace', async () => {
    await fs.mkdir(path.join(ws.root, 'sub'));
    expect((await call({ command: 'pwd' })).data).toMatchObject({ stdout: `${ws.root}\n` });
    expect((await call({ command: 'pwd', cwd: 'sub' })).data).toMatchObject({
      stdout: `${path.join(ws.root, 'sub')}\n`,
    });
  });

  it('refuses a cwd outside the workspace', async () => {
    expect((await call({ command: 'pwd', cwd: ws.outside })).error?.code).toBe('EPERM');
  });

  it('refuses arguments that name a path outside the workspace', async () => {
    expect((await call({ command: 'cat', args: ['/root/secret.txt'] })).error?.code).toBe('EPERM');
    expect((await call({ command: 'cat', args: ['../outside/secret.txt'] })).error?.code).toBe('EPERM');
    await fs.symlink(path.join(ws.outside, 'secret.txt'), path.join(ws.root, 'link.txt'));
    expect((await call({ command: 'cat', args: ['link.txt'] })).error?.code).toBe('EPERM');
  });

  it('does not pass the worker environment to the program', async () => {
    process.env.STARRY_TEST_SECRET = 'do-not-leak';
    try {
      const result = await call({ command: 'printenv' }, { tools: toolsConfig({ shellAllow: ['printenv'] }) });
      expect((result.data as { stdout: string }).stdout).not.toContain('do-not-leak');
    } finally {
      delete process.env.STARRY_TEST_SECRET;
    }
  });

  it('reports a program that is allowed but not installed as ENOENT', async () => {
    const result = await call(
      { command: 'no-such-program-xyz' },
      { tools: toolsConfig({ shellAllow: ['no-such-program-xyz'] }) },
    );
    expect(result.error).toMatchObject({ code: 'ENOENT', kind: 'execution' });
  });

  it('stops a program whose output exceeds the cap with E_OUTPUT_TOO_LARGE', async () => {
    await fs.writeFile(path.join(ws.root, 'big.txt'), 'z'.repeat(5000));
    const result = await call({ command: 'cat', args: ['big.txt'] }, { tools: toolsConfig({ maxOutputBytes: 1000 }) });
    expect(result.error).toMatchObject({ code: 'E_OUTPUT_TOO_LARGE', kind: 'execution', source: 'shell.run' });
  });

  it('kills a program that outlives its timeout with ETIMEDOUT, a transient error', async () => {
    const result = await call({ command: 'sleep', args: ['5'], timeoutMs: 200 });
    // Had the program not been killed, sleep would have succeeded and there would be no error.
    expect(result.error).toMatchObject({ code: 'ETIMEDOUT', kind: 'transient' });
  });

  it('caps the requested timeout at the tool timeout', async () => {
    const result = await call({ command: 'sleep', args: ['5'], timeoutMs: 60_000 }, { toolTimeoutMs: 200 });
    expect(result.error?.message).toContain('200 ms');
  });

  it('ends promptly with the abort reason when the signal aborts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('halted by test')), 100);
    // Had the abort been ignored, sleep would have succeeded instead of rejecting.
    await expect(call({ command: 'sleep', args: ['5'] }, {}, controller.signal)).rejects.toThrow('halted by test');
  });

  it('does not start at all when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('already halted'));
    await expect(call({ command: 'echo', args: ['x'] }, {}, controller.signal)).rejects.toThrow('already halted');
  });
});
