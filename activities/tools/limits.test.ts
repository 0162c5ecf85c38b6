/**
 * Resource limits of sandboxed programs and of the workspace (issue 30), against the real sandbox: real
 * bwrap, cgroups where this host allows them (and the rlimits alone when the policy turns them off), real
 * programs. Small limits keep every case quick.
 */
import { promises as fs, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_LIMITS, type SandboxLimits } from '../../core/worker-policy';
import { sandboxReport } from './confine';
import { runTool, type ToolRequest } from './index';
import { cgroupHost, ownCgroups } from './limits';
import { makeWorkspace, testPolicy, toolsConfig, type TempWorkspace } from './test-support';

const MiB = 1024 * 1024;
const SHELL = ['sh', 'head', 'ls', 'cat', 'echo'];

let ws: TempWorkspace;
beforeEach(async () => {
  ws = await makeWorkspace();
});
afterEach(() => ws.cleanup());

/** Run `sh -c script` under the given limits (and policy overrides). */
function sh(
  script: string,
  limits: Partial<SandboxLimits>,
  policy: Parameters<typeof testPolicy>[1] = {},
  req: Partial<ToolRequest> = {},
) {
  return runTool(
    {
      name: 'shell.run',
      args: { command: 'sh', args: ['-c', script] },
      tick: 1,
      workspace: [ws.root],
      tools: toolsConfig({ shellAllow: SHELL }),
      toolTimeoutMs: 20_000,
      ...req,
    },
    undefined,
    { policy: testPolicy(ws, { shellAllow: SHELL, limits, ...policy }) },
  );
}

/** Processes on the host whose command line is `argv` (a sandbox's processes are visible from outside it). */
function countProcesses(argv: string[]): number {
  const wanted = `${argv.join('\0')}\0`;
  let n = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8') === wanted) n++;
    } catch {
      // ended meanwhile
    }
  }
  return n;
}

/** The most processes running `argv` at once while `p` runs, sampled as fast as /proc allows. */
async function peakWhile<T>(argv: string[], p: Promise<T>): Promise<{ result: T; peak: number }> {
  let done = false;
  let peak = 0;
  const sampling = (async () => {
    while (!done) {
      peak = Math.max(peak, countProcesses(argv));
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  const result = await p.finally(() => {
    done = true;
  });
  await sampling;
  return { result, peak };
}

const FORK_BOMB = 'i=0; while [ $i -lt 800 ]; do sleep 97.31 & i=$((i+1)); done; wait';

describe('shell.run under resource limits', () => {
  it('runs every program with the policy’s rlimits: CPU time, file size, open files, no core files', async () => {
    const result = await sh('ulimit -t; ulimit -f; ulimit -n; ulimit -c', {
      cpuSeconds: 7,
      fileSizeBytes: 4 * MiB,
      openFiles: 100,
    });
    // dash reports the file size in 512-byte blocks; 4 MiB is also below the workspace's room.
    expect((result.data as { stdout: string }).stdout).toBe(`7\n${(4 * MiB) / 512}\n100\n0\n`);
  });

  it('stops a fork bomb at the process limit with E_LIMIT naming it; the count never exceeds the limit', async () => {
    const { result, peak } = await peakWhile(['sleep', '97.31'], sh(FORK_BOMB, { processes: 20 }));
    expect(result.error).toMatchObject({ code: 'E_LIMIT', kind: 'execution', source: 'shell.run' });
    expect(result.error?.message).toContain(
      "E_LIMIT: 'sh' hit the process limit (limits.processes: 20 processes and threads at once)",
    );
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(20);
    expect(countProcesses(['sleep', '97.31'])).toBe(0);
  });

  it('bounds a fork bomb by RLIMIT_NPROC when cgroups are off (the program drops to nobody; its own error is the result)', async () => {
    if (process.getuid?.() !== 0) return; // as another user, RLIMIT_NPROC counts the whole session: covered by the cgroup case
    const { result, peak } = await peakWhile(
      ['sleep', '97.31'],
      sh(FORK_BOMB, { processes: 20, cgroups: false }, { allowRoot: false }),
    );
    expect(result.success).toBe(true);
    expect((result.data as { stderr: string }).stderr).toMatch(/fork/i);
    // Not more than 20 (fewer when other sandboxes of nobody grew meanwhile: the rlimit is per user).
    expect(peak).toBeLessThanOrEqual(20);
  });

  it('stops a CPU spin at the CPU time limit with E_LIMIT cpu', async () => {
    const result = await sh('while :; do :; done', { cpuSeconds: 1 });
    expect(result.error).toMatchObject({ code: 'E_LIMIT', kind: 'execution' });
    expect(result.error?.message).toContain("'sh' hit the CPU time limit (limits.cpuSeconds: 1 s per process)");
    expect(result.error?.suggestion).toContain('smaller steps');
  });

  it('fills /tmp only to its cap: the program sees ENOSPC', async () => {
    const result = await sh('head -c 300M /dev/zero > /tmp/x; ls -l /tmp/x', { tmpBytes: MiB });
    const data = result.data as { stdout: string; stderr: string };
    expect(data.stderr).toContain('No space left on device');
    expect(Number(data.stdout.split(/\s+/)[4])).toBeLessThanOrEqual(MiB);
  });

  it('gives no writable /tmp when tmpBytes is 0', async () => {
    const data = (await sh('echo x > /tmp/x', { tmpBytes: 0 })).data as { exitCode: number; stderr: string };
    expect(data.exitCode).not.toBe(0);
    expect(data.stderr).toMatch(/Read-only file system/);
  });

  it('stops a 200 MB file in the workspace at the workspace’s room with E_LIMIT disk', async () => {
    await fs.writeFile(path.join(ws.root, 'notes.txt'), 'x'.repeat(1000));
    const result = await sh('head -c 200M /dev/zero > big', { workspaceBytes: MiB, fileSizeBytes: 8 * MiB });
    expect(result.error).toMatchObject({ code: 'E_LIMIT', kind: 'execution' });
    expect(result.error?.message).toContain(
      "'sh' hit the workspace's disk limit (limits.workspaceBytes: 1 MiB for all its files and directories)",
    );
    // notes.txt counts a block: the room left is the rest.
    expect((await fs.stat(path.join(ws.root, 'big'))).size).toBe(MiB - 4096);
  });

  it('still runs programs in a workspace at its cap; one that writes a file meets the disk limit', async () => {
    await fs.writeFile(path.join(ws.root, 'full.txt'), 'x'.repeat(1000));
    expect((await sh('echo still here', { workspaceBytes: 4096 })).data).toMatchObject({
      exitCode: 0,
      stdout: 'still here\n',
    });
    // SIGXFSZ at its first byte, or the watch that saw the new file first.
    expect((await sh('echo more > more.txt', { workspaceBytes: 4096 })).error?.message).toMatch(
      /^E_LIMIT: 'sh' (hit|was stopped: the workspace holds (more than 4096|8192) bytes, over) the workspace's disk limit/,
    );
  });

  it('stops a file at the file size limit with E_LIMIT fileSize', async () => {
    const result = await sh('head -c 200M /dev/zero > big', { fileSizeBytes: 256 * 1024 });
    expect(result.error?.message).toContain("'sh' hit the file size limit (limits.fileSizeBytes: 256 KiB per file)");
    expect((await fs.stat(path.join(ws.root, 'big'))).size).toBe(256 * 1024);
  });

  it('reports a workspace over its cap after a run of files that each fit, as E_LIMIT disk', async () => {
    const result = await sh('head -c 600K /dev/zero > a; head -c 600K /dev/zero > b', { workspaceBytes: MiB });
    expect(result.error?.code).toBe('E_LIMIT');
    // Measured after the run, or by the watch while it ran, whichever saw it first.
    expect(result.error?.message).toMatch(
      /^E_LIMIT: (after 'sh' ran,|'sh' was stopped:) the workspace holds (more than )?\d+ bytes, over the workspace's disk limit/,
    );
  });

  it('stops a program at the memory limit with E_LIMIT memory where cgroups count memory', async () => {
    if (!(await cgroupHost())?.memory) return; // rlimits alone: the program's own "out of memory" is its result
    const result = await sh(
      'x=$(head -c 200M /dev/zero | tr "\\0" a); echo ${#x}',
      { memoryBytes: 32 * MiB },
      { shellAllow: [...SHELL, 'tr'] },
      { tools: toolsConfig({ shellAllow: [...SHELL, 'tr'] }) },
    );
    expect(result.error).toMatchObject({ code: 'E_LIMIT', kind: 'execution' });
    expect(result.error?.message).toContain("'sh' hit the memory limit (limits.memoryBytes: 32 MiB)");
  });
});

describe('fs.write under the workspace cap', () => {
  const write = (file: string, content: string, append = false) =>
    runTool(
      {
        name: 'fs.write',
        args: { path: file, content, append },
        tick: 1,
        workspace: [ws.root],
        tools: toolsConfig(),
        toolTimeoutMs: 10_000,
      },
      undefined,
      {
        policy: testPolicy(ws, { limits: { workspaceBytes: 8192 } }),
      },
    );

  it('refuses to grow the workspace past its cap with E_LIMIT disk, and still lets a file shrink', async () => {
    expect((await write('a.txt', 'a'.repeat(5000))).success).toBe(true);
    const refused = await write('b.txt', 'b'.repeat(600));
    expect(refused.error).toMatchObject({ code: 'E_LIMIT', kind: 'execution', source: 'fs.write' });
    expect(refused.error?.message).toBe(
      "E_LIMIT: writing 'b.txt' (600 bytes) would take the workspace from 8192 to 12288 bytes, over the workspace's disk limit (limits.workspaceBytes: 8 KiB for all its files and directories)",
    );
    await expect(fs.stat(path.join(ws.root, 'b.txt'))).rejects.toThrow('ENOENT');
    expect((await write('a.txt', 'a'.repeat(4000), true)).error?.code).toBe('E_LIMIT');
    // The same blocks: not a growth.
    expect((await write('a.txt', 'a'.repeat(8000))).success).toBe(true);
    expect((await write('a.txt', 'short')).success).toBe(true);
    expect(await fs.readFile(path.join(ws.root, 'a.txt'), 'utf8')).toBe('short');
  });
});

describe('finding the worker’s cgroups', () => {
  const mountinfo = (...lines: string[]) => lines.map((l, i) => `${30 + i} 23 0:${40 + i} ${l}`).join('\n');

  it('reads a host with cgroup v1 hierarchies and an empty unified one', () => {
    const self = '8:pids:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n';
    const mounts = mountinfo(
      '/ /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
      '/ /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
      '/ /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
      '/ /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw',
    );
    expect(ownCgroups(self, mounts)).toEqual({
      pids: '/sys/fs/cgroup/pids',
      memory: '/sys/fs/cgroup/memory/process_api/abc',
      v2: '/sys/fs/cgroup/unified',
    });
  });

  it('reads a container whose cgroup mounts are rooted at its own cgroup', () => {
    const self = '9:memory,pids:/docker/abc\n';
    const mounts = mountinfo(
      '/docker/abc /sys/fs/cgroup/memory,pids ro,nosuid master:12 - cgroup cgroup rw,memory,pids',
    );
    expect(ownCgroups(self, mounts)).toEqual({
      pids: '/sys/fs/cgroup/memory,pids',
      memory: '/sys/fs/cgroup/memory,pids',
      v2: undefined,
    });
  });

  it('reads a cgroup v2 host, and mount points with escaped spaces', () => {
    const mounts = mountinfo('/ /sys/fs/my\\040cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate');
    expect(ownCgroups('0::/system.slice/starry.service\n', mounts)).toEqual({
      pids: undefined,
      memory: undefined,
      v2: '/sys/fs/my cgroup/system.slice/starry.service',
    });
  });

  it('says at the worker’s start what enforces the limits', async () => {
    expect(await sandboxReport({ ...DEFAULT_LIMITS, cgroups: false })).toBe(
      'sandbox: bubblewrap; limits by rlimits only (limits.cgroups is false: processes are counted per user)',
    );
    const host = await cgroupHost();
    if (host)
      expect(await sandboxReport(DEFAULT_LIMITS)).toMatch(
        new RegExp(`^sandbox: bubblewrap; limits by cgroup v${host.version} \\((pids|memory)`),
      );
  });
});
