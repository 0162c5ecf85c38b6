/**
 * Disks that stay bounded (issue 52), through real workflows on a real worker: a task whose program
 * floods its workspace with directories is stopped at the workspace's cap, the call's E_LIMIT pain
 * naming it; and the tenant of a task comes from its workflow id, so two agents of one tenant are
 * bounded together by `limits.tenantBytes` (the second's write refused naming the tenant's cap) while
 * another tenant's agent still writes.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseWorkerPolicy } from '../../core/worker-policy';
import { scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { done, turn } from '../helpers/scenarios';

const KiB = 1024;
let h: Harness;
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'starry-disks-')));

beforeAll(async () => {
  const policy = parseWorkerPolicy({
    roots: [base],
    llmDirs: [os.tmpdir()],
    shellAllow: ['sh'],
    allowRoot: true,
    // Each agent's 150 KiB fits its workspace; two of one tenant do not fit the tenant's 256 KiB.
    limits: { workspaceBytes: 192 * KiB, tenantBytes: 256 * KiB },
  });
  h = await startHarness({ name: 'disks', activities: { policy } });
});
afterAll(async () => {
  await h?.stop();
  execFileSync('rm', ['-rf', base]);
});

/** A workspace in `tenant`'s space (`<root>/<tenant>`). */
function workspaceOf(tenant: string): string {
  const dir = path.join(base, tenant, uniqueId('ws'));
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Run one task of `tenant`'s agent `agentId` that makes `call` then stops; its one tool call's record. */
async function runOne(tenant: string, agentId: string, workspace: string, call: Parameters<typeof turn>[0]) {
  const agents = h.agents.forTenant(tenant);
  const config = scriptedConfig(writeScript([turn(call), done()]), workspace, { tools: { shellAllow: ['sh'] } });
  const { taskId } = await agents.submit(agentId, { goal: 'Use the disk.', config });
  const result = await agents.waitForTask(agentId, taskId);
  expect(result.outcome).toBe('COMPLETED');
  expect(result.toolCalls).toHaveLength(1);
  return result.toolCalls[0]!;
}

it('stops a task’s directory flood at the workspace’s cap, as E_LIMIT pain naming it', async () => {
  const ws = workspaceOf('floods');
  const call = await runOne('floods', uniqueId('flood'), ws, {
    name: 'shell.run',
    args: { command: 'sh', args: ['-c', 'mkdir $(seq 100000)'] },
  });
  expect(call).toMatchObject({ status: 'failed', error: { code: 'E_LIMIT', kind: 'execution' } });
  expect(call.error?.message).toMatch(
    /^E_LIMIT: 'sh' was stopped: the workspace holds (more than )?\d+ bytes, over the workspace's disk limit \(limits\.workspaceBytes: 192 KiB/,
  );
  // 48 directories fill 192 KiB; unwatched, the program would have made 100,000.
  const made = execFileSync('find', [ws, '-mindepth', '1'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  expect(made.length).toBeGreaterThan(48);
  expect(made.length).toBeLessThan(10_000);
});

it('bounds two agents of one tenant together: the second’s write is refused naming the tenant’s cap; another tenant still writes', async () => {
  const write = { name: 'fs.write', args: { path: 'big.txt', content: 'x'.repeat(150 * KiB) } };
  const [a1, a2, b1] = [workspaceOf('acme'), workspaceOf('acme'), workspaceOf('beta')];
  expect(await runOne('acme', uniqueId('a'), a1, write)).toMatchObject({ status: 'ok' });
  const second = await runOne('acme', uniqueId('a'), a2, write);
  expect(second).toMatchObject({ status: 'failed', error: { code: 'E_LIMIT', kind: 'execution', source: 'fs.write' } });
  expect(second.error?.message).toMatch(
    /^E_LIMIT: writing 'big\.txt' \(153600 bytes\) would take the workspaces of tenant acme from \d+ to \d+ bytes, over the tenant's disk limit \(limits\.tenantBytes: 256 KiB for all the workspaces of tenant acme together\)$/,
  );
  expect(() => statSync(path.join(a2, 'big.txt'))).toThrow(/ENOENT/);
  expect(await runOne('beta', uniqueId('b'), b1, write)).toMatchObject({ status: 'ok' });
  expect(statSync(path.join(b1, 'big.txt')).size).toBe(150 * KiB);
});
