/**
 * The sandbox under a container's restrictions (docs/DEPLOY.md#shellrun-on-ec2), reproduced without
 * Docker: test/fixtures/container/docker-defaults.sh runs a tool worker's code as an unprivileged
 * user with no capability, in a mount and PID namespace whose /proc is masked as Docker masks it, and
 * under a seccomp filter that refuses pivot_root as Docker's default profile does. The ECS tool
 * container is privileged because that is the one task-definition setting that lifts both; without it
 * the worker says so at start, naming the fix, and `shell.run` refuses to run unconfined.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';

const FIXTURES = path.join(projectRoot(), 'test', 'fixtures', 'container');
/** The image's `node` user. */
const AS_UID = 1000;
const canReproduce =
  process.platform === 'linux' &&
  process.getuid?.() === 0 &&
  ['/usr/bin/unshare', '/usr/bin/setpriv', '/usr/bin/python3', '/usr/bin/bwrap'].every((p) => existsSync(p));

/**
 * What a tool worker under the given restrictions reports: its sandbox probe, then a confined
 * `echo` built by confinedSpawn (the command line `shell.run` runs).
 */
function underContainer(restrictions: { maskProc: boolean; noPivotRoot: boolean }): {
  probe: string;
  ran?: string;
} {
  // Under /tmp itself: the test run's temporary folder is closed to the image's user.
  const workspace = mkdtempSync('/tmp/starry-container-');
  chownSync(workspace, AS_UID, AS_UID);
  try {
    return inContainer(workspace, restrictions);
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

function inContainer(workspace: string, restrictions: { maskProc: boolean; noPivotRoot: boolean }) {
  const confine = path.join(projectRoot(), 'lib', 'activities', 'tools', 'confine.js');
  const limits = path.join(projectRoot(), 'lib', 'core', 'worker-policy', 'sandbox-limits.js');
  const script = `
    const { spawnSync } = require('node:child_process');
    const { confinementAvailable, confinedSpawn } = require(${JSON.stringify(confine)});
    const { DEFAULT_LIMITS } = require(${JSON.stringify(limits)});
    (async () => {
      const probe = confinementAvailable();
      if (!probe.ok) return console.log(JSON.stringify({ probe: probe.why }));
      const ws = ${JSON.stringify(workspace)};
      const sandbox = await confinedSpawn({ command: 'echo', argv: ['confined'], roots: [ws], cwd: ws,
        env: { PATH: '/usr/bin:/bin' }, dropRoot: false, source: 'shell.run', otherwise: 'no other way',
        limits: { ...DEFAULT_LIMITS, cgroups: false } });
      const run = spawnSync(sandbox.file, sandbox.args, { env: sandbox.env, encoding: 'utf8' });
      console.log(JSON.stringify({ probe: 'ok', ran: (run.stdout + run.stderr).trim() }));
    })();`;
  const run = spawnSync(
    'unshare',
    ['--mount', '--pid', '--fork', 'sh', path.join(FIXTURES, 'docker-defaults.sh'), process.execPath, '-e', script],
    {
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        PATH: '/usr/bin:/bin',
        AS_UID: String(AS_UID),
        MASK: restrictions.maskProc ? '1' : '0',
        NO_PIVOT_ROOT: restrictions.noPivotRoot ? '1' : '0',
      },
    },
  );
  if (run.status !== 0) throw new Error(`the container could not be reproduced (${run.status}): ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as { probe: string; ran?: string };
}

(canReproduce ? describe : describe.skip)(
  'the sandbox in a container (reproduced: needs root, unshare, setpriv, python3)',
  () => {
    it('runs confined with what `privileged` gives: an unmasked /proc and pivot_root allowed', () => {
      expect(underContainer({ maskProc: false, noPivotRoot: false })).toEqual({ probe: 'ok', ran: 'confined' });
    });

    it("fails at the worker's start, naming the masked /proc and the fix, under Docker's masked paths", () => {
      const { probe, ran } = underContainer({ maskProc: true, noPivotRoot: false });
      expect(ran).toBeUndefined();
      expect(probe).toMatch(
        /^bwrap cannot build a sandbox: bwrap: Can't mount proc on \/newroot\/proc: Operation not permitted/,
      );
      expect(probe).toContain(
        'run the tool container privileged, as the ECS stack does, or under Docker with --security-opt systempaths=unconfined',
      );
    });

    it("fails at the worker's start, naming pivot_root and the fix, under Docker's default seccomp profile", () => {
      const { probe, ran } = underContainer({ maskProc: false, noPivotRoot: true });
      expect(ran).toBeUndefined();
      expect(probe).toMatch(/^bwrap cannot build a sandbox: bwrap: pivot_root: Operation not permitted/);
      expect(probe).toContain('--security-opt seccomp=unconfined');
    });
  },
);
