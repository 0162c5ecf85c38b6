import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { createToolActivities } from './index';
import { makeWorkspace, testPolicy, toolsConfig, type TempWorkspace } from './test-support';

describe('checkTaskLimits (the submit-time check)', () => {
  let ws: TempWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    // A root that is lexically inside the allowed tree but resolves outside it.
    await fs.symlink(ws.outside, path.join(ws.root, 'escape'));
  });
  afterAll(() => ws.cleanup());

  const activities = () => createToolActivities(testPolicy(ws, { roots: [ws.root], shellAllow: ['ls', 'cat'], httpAllow: ['example.com'], maxOutputBytes: 1000 }));

  it('accepts limits that narrow the policy', async () => {
    await expect(activities().checkTaskLimits({ workspace: [ws.root], tools: toolsConfig({ shellAllow: ['ls'], httpAllow: [], maxOutputBytes: 500 }) })).resolves.toEqual({});
  });

  it('refuses every wider field, naming each one and how to fix it', async () => {
    const { refused } = await activities().checkTaskLimits({
      workspace: [ws.outside],
      tools: toolsConfig({ shellAllow: ['ls', 'sh'], httpAllow: ['localhost'], maxOutputBytes: 5000 }),
    });
    expect(refused).toMatch(/Refused by the worker's policy/);
    expect(refused).toContain(`workspace: '${ws.outside}'`);
    expect(refused).toContain("tools.shellAllow: 'sh'");
    expect(refused).toContain("tools.httpAllow: 'localhost'");
    expect(refused).toContain('tools.maxOutputBytes: 5000');
    expect(refused).toContain('STARRY_WORKER_POLICY');
  });

  it('refuses a root that is a symlink out of the allowed tree', async () => {
    const { refused } = await activities().checkTaskLimits({ workspace: [path.join(ws.root, 'escape')], tools: toolsConfig({ shellAllow: ['ls'], httpAllow: [], maxOutputBytes: 500 }) });
    expect(refused).toContain(`resolves to ${ws.outside}`);
  });
});
