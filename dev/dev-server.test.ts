import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isAlive } from '../client/connection';
import { stopDevServer, stopPid } from './dev-server';

describe('stopping a dev server by pid', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'starry-state-'));
  const port = 65001;
  const pidFile = path.join(dir, `server-${port}.pid`);
  beforeAll(() => {
    process.env.STARRY_STATE_DIR = dir;
  });
  afterAll(() => {
    delete process.env.STARRY_STATE_DIR;
  });

  it('stops its own process and removes the pid file that names it', async () => {
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    writeFileSync(pidFile, String(child.pid));
    await stopPid(child.pid!, port);
    expect(isAlive(child.pid!)).toBe(false);
    expect(existsSync(pidFile)).toBe(false);
  });

  it("leaves alone a process that took a dead server's pid, and removes the stale pid file", async () => {
    // The pid file names a live process that is not a dev server on the port (its pid was reused).
    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    writeFileSync(pidFile, String(other.pid));
    await expect(stopDevServer(port)).resolves.toBe(false);
    expect(isAlive(other.pid!)).toBe(true);
    expect(existsSync(pidFile)).toBe(false);
    other.kill('SIGKILL');
  });

  it('leaves the pid file of a newer server alone when a stale one is stopped', async () => {
    const stale = spawn('sleep', ['60'], { stdio: 'ignore' });
    const live = spawn('sleep', ['60'], { stdio: 'ignore' });
    writeFileSync(pidFile, String(live.pid));
    await stopPid(stale.pid!, port);
    expect(readFileSync(pidFile, 'utf8')).toBe(String(live.pid));
    expect(isAlive(live.pid!)).toBe(true);
    live.kill('SIGKILL');
  });
});
