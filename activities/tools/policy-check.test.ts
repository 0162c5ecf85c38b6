import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { createToolActivities } from './index';
import { checkPolicy } from './policy-check';
import { resolveInWorkspace, Workspace } from './sandbox';
import { ToolError } from '../../core/errors/activity';
import { makeWorkspace, testPolicy, toolsConfig, type TempWorkspace } from './test-support';

describe('checkTaskLimits (the submit-time check)', () => {
  let ws: TempWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    // A root that is lexically inside the allowed tree but resolves outside it.
    await fs.symlink(ws.outside, path.join(ws.root, 'escape'));
  });
  afterAll(() => ws.cleanup());

  const activities = () =>
    createToolActivities(
      testPolicy(ws, { roots: [ws.root], shellAllow: ['ls', 'cat'], httpAllow: ['example.com'], maxOutputBytes: 1000 }),
    );

  it('accepts limits that narrow the policy', async () => {
    await expect(
      activities().checkTaskLimits({
        workspace: [ws.root],
        tools: toolsConfig({ shellAllow: ['ls'], httpAllow: [], maxOutputBytes: 500 }),
      }),
    ).resolves.toEqual({});
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

  it('refuses a guide or context strategy the worker does not offer, listing what it has', async () => {
    const offer = { guides: ['pain', 'careful'], contextStrategies: ['prefix'] };
    const tools = toolsConfig({ shellAllow: ['ls'], httpAllow: [], maxOutputBytes: 500 });
    const own = createToolActivities(testPolicy(ws, { roots: [ws.root] }), undefined, undefined, { offer });
    await expect(own.checkTaskLimits({ workspace: [ws.root], tools, guide: 'careful' })).resolves.toEqual({});
    const { refused } = await own.checkTaskLimits({
      workspace: [ws.root],
      tools,
      guide: 'zen',
      context: { strategy: 'lossy' },
    });
    expect(refused).toBe(
      'guide "zen" is not on this worker: it has pain, careful; context strategy "lossy" is not on this worker: it has prefix. ' +
        'A worker adds guides and context strategies with plugin modules (STARRY_PLUGINS, createWorker({ plugins })).',
    );
    // A worker without plugins offers the shipped guides.
    const plain = await activities().checkTaskLimits({ workspace: [ws.root], tools, guide: 'careful' });
    expect(plain.refused).toMatch(
      /^guide "careful" is not on this worker: it has pain, safety, learning, debugging, neutral\./,
    );
  });

  it('refuses a root that is a symlink out of the allowed tree', async () => {
    const { refused } = await activities().checkTaskLimits({
      workspace: [path.join(ws.root, 'escape')],
      tools: toolsConfig({ shellAllow: ['ls'], httpAllow: [], maxOutputBytes: 500 }),
    });
    expect(refused).toContain(`resolves to ${ws.outside}`);
  });
});

describe("a tool call's workspace", () => {
  let ws: TempWorkspace;
  let current: string;
  let release: string;
  beforeEach(async () => {
    ws = await makeWorkspace();
    // The task's root is a link inside the allowed tree to the release it works on.
    release = path.join(ws.root, 'v1');
    current = path.join(ws.root, 'current');
    await fs.mkdir(release);
    await fs.writeFile(path.join(release, 'a.txt'), 'inside');
    await fs.writeFile(path.join(ws.outside, 'secret.txt'), 'secret');
    await fs.symlink(release, current);
  });
  afterEach(() => ws.cleanup());

  /** Point the task's root at `target`, atomically (a rename, as a deploy swaps its `current` link). */
  async function retarget(target: string): Promise<void> {
    await fs.symlink(target, `${current}.next`);
    await fs.rename(`${current}.next`, current);
  }

  it('confines the call to the realpaths its policy check approved, though the root is retargeted outside the policy meanwhile', async () => {
    const policy = testPolicy(ws, { roots: [ws.root] });
    const workspace = new Workspace([current], 'fs.read');
    await checkPolicy(policy, { workspace: workspace.roots, tools: toolsConfig() }, 'fs.read', workspace);
    await retarget(ws.outside);

    // The link now leads outside: what lies behind it is refused, what the check approved is not.
    const refused = await resolveInWorkspace(workspace, 'secret.txt', { mustExist: true, source: 'fs.read' }).catch(
      (err: unknown) => err,
    );
    expect(ToolError.is(refused) && refused.error.code).toBe('EPERM');
    await expect(
      resolveInWorkspace(workspace, path.join(release, 'a.txt'), { mustExist: true, source: 'fs.read' }),
    ).resolves.toBe(path.join(release, 'a.txt'));
    // Looked up afresh (the next call), the root resolves outside the policy, which refuses it.
    const next = new Workspace([current], 'fs.read');
    const wider = await checkPolicy(policy, { workspace: next.roots, tools: toolsConfig() }, 'fs.read', next).catch(
      (err: unknown) => err,
    );
    expect(ToolError.is(wider) && wider.error.message).toContain(`resolves to ${ws.outside}`);
  });

  it('looks each root up once for the whole call', async () => {
    const workspace = new Workspace([current], 'fs.list');
    expect(await workspace.realRoots()).toEqual([release]);
    await retarget(ws.outside);
    expect(await workspace.realRoots()).toEqual([release]);
    expect(await workspace.realpath(current)).toBe(release);
  });
});

describe('a workspace that does not exist yet', () => {
  let ws: TempWorkspace;
  beforeEach(async () => {
    ws = await makeWorkspace();
    await fs.symlink(ws.outside, path.join(ws.root, 'escape'));
  });
  afterEach(() => ws.cleanup());
  const check = (root: string, source = 'fs.write') => {
    const workspace = new Workspace([root], source);
    return checkPolicy(
      testPolicy(ws, { roots: [ws.root] }),
      { workspace: [root], tools: toolsConfig() },
      source,
      workspace,
    );
  };

  it("is created by the task's first call when it lies inside a root the worker allows, parents and all", async () => {
    const root = path.join(ws.root, 'team', 'agent-1');
    await check(root);
    expect((await fs.stat(root)).isDirectory()).toBe(true);
    // The call then works in it.
    const workspace = new Workspace([root], 'fs.list');
    expect(await workspace.realRoots()).toEqual([await fs.realpath(root)]);
  });

  it('is not created behind a symlink out of the allowed tree, nor outside the roots (the call is refused)', async () => {
    await check(path.join(ws.root, 'escape', 'new'));
    expect(await fs.readdir(ws.outside)).toEqual([]);
    const outside = path.join(path.dirname(ws.root), 'not-a-root');
    await expect(check(outside)).rejects.toThrow(/not inside a root the worker allows/);
    await expect(fs.stat(outside)).rejects.toThrow(/ENOENT/);
  });

  it('is not created by the submit check, which has no side effect', async () => {
    const root = path.join(ws.root, 'later');
    const { refused } = await createToolActivities(testPolicy(ws, { roots: [ws.root] })).checkTaskLimits({
      workspace: [root],
      tools: toolsConfig(),
    });
    expect(refused).toBeUndefined();
    await expect(fs.stat(root)).rejects.toThrow(/ENOENT/);
  });
});
