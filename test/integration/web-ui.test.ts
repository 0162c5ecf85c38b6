/**
 * The Temporal Web UI as a human sees it, in a real browser (playwright-core driving Debian's chromium,
 * which `npm run setup` installs): the dev server's own UI, showing workflows this test ran.
 */
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../../bench/chromium';
import {
  alertFor,
  makeWorkspace,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { activityRunning } from '../helpers/workflow-history';
import { agentWorkflowId, taskWorkflowId } from '../../workflows/messages';
import { eventually } from '../../dev/poll';

jest.setTimeout(180_000);

const DONE = { text: 'Done.', usage: { inputTokens: 10, outputTokens: 5 } };
const LIST = { toolCalls: [{ name: 'fs.list', args: {} }], usage: { inputTokens: 100, outputTokens: 10 } };

let h: Harness;
let browser: Browser;
let page: Page;
const ui = () => process.env.STARRY_UI_URL ?? '';
/** One prefix for this run's agents: the list is filtered to them, whatever else the server holds. */
const run = uniqueId('ui');
const ids = {
  locked: `${run}-locked`,
  unlocked: `${run}-unlocked`,
  halted: `${run}-halted`,
  eperm: `${run}-eperm`,
  fatal: `${run}-fatal`,
  waiting: `${run}-waiting`,
};

beforeAll(async () => {
  browser = await launchChromium();
  if (!ui())
    throw new Error(
      'STARRY_UI_URL is not set: the integration run starts the dev server with its Web UI (test/global-setup.ts)',
    );
  h = await startHarness({ name: 'web-ui' });
  const ws = () => makeWorkspace({ 'notes.md': '# Notes\n' });
  const looping = (maxTicks: number) =>
    scriptedConfig(writeScript(Array.from({ length: 5 }, () => LIST)), ws(), { safety: { maxTicks } });

  // Locked by the loop cap, and another locked then unlocked (its closed task must not look locked).
  await h.agents.waitForTask(
    ids.locked,
    (await h.agents.submit(ids.locked, { goal: 'loop', config: looping(2) })).taskId,
  );
  await h.agents.waitForTask(
    ids.unlocked,
    (await h.agents.submit(ids.unlocked, { goal: 'loop', config: looping(2) })).taskId,
  );
  await h.agents.unlock(ids.unlocked, { note: 'seen' });
  // Halted mid-call.
  const slow = await h.agents.submit(ids.halted, {
    goal: 'slow',
    config: scriptedConfig(writeScript([{ delayMs: 30_000, text: 'slow' }, DONE]), ws()),
  });
  await activityRunning(h.agents.client, slow.workflowId, 'llm');
  await h.agents.halt(ids.halted, { by: 'ops' });
  await h.agents.waitForTask(ids.halted, slow.taskId);
  // A refused read, then success.
  const eperm = scriptedConfig(
    writeScript([{ toolCalls: [{ name: 'fs.read', args: { path: '/etc/hostname' } }] }, DONE]),
    ws(),
  );
  await h.agents.waitForTask(
    ids.eperm,
    (await h.agents.submit(ids.eperm, { goal: 'read outside', config: eperm })).taskId,
  );
  // A fatal LLM error.
  const fatal = scriptedConfig(writeScript([{ error: { status: 401, message: 'invalid API key' } }]), ws());
  await h.agents.waitForTask(ids.fatal, (await h.agents.submit(ids.fatal, { goal: 'no key', config: fatal })).taskId);

  // A call that waits for a human's approval (the agent and its task stay running).
  await h.agents.submit(ids.waiting, {
    goal: 'write',
    config: scriptedConfig(
      writeScript([{ toolCalls: [{ name: 'fs.write', args: { path: 'plan.md', content: 'v2' } }] }, DONE]),
      ws(),
      { tools: { approval: { ask: ['fs.write'] } } },
    ),
  });
  await eventually('the waiting call', async () => (await h.agents.approvals(ids.waiting)).approvals[0]);

  page = await browser.newPage({ viewport: { width: 1600, height: 1200 } });
});
afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

/** The rows of the workflow list for a visibility query, as [status, workflow id]. */
async function listed(query: string): Promise<string[][]> {
  await page.goto(`${ui()}/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
  const rows = page.locator('table tbody tr');
  await rows.first().waitFor({ timeout: 30_000 });
  // A busy UI first shows placeholder rows: read the table once every row is a workflow.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const parsed = (await rows.allInnerTexts()).map((r) => {
      const words = r.split(/\s+/);
      return [
        words.find((w) => /^(RUNNING|COMPLETED|FAILED|CANCELED|TERMINATED)$/.test(w)) ?? '?',
        words.find((w) => w.startsWith('agent-')) ?? '?',
      ];
    });
    if (parsed.every(([status, id]) => status !== '?' && id !== '?') || Date.now() > deadline) return parsed;
    await page.waitForTimeout(250);
  }
}

/** The text of a workflow's page (its latest run) once it shows `expected` (the UI loads in parts). */
async function openWorkflow(
  workflowId: string,
  expected: RegExp,
  tab: 'history' | 'user-metadata' = 'history',
): Promise<string> {
  const { runId } = await h.agents.client.workflow.getHandle(workflowId).describe();
  await page.goto(`${ui()}/namespaces/default/workflows/${workflowId}/${runId}/${tab}`);
  const deadline = Date.now() + 30_000;
  for (;;) {
    // User markdown (summaries, details) renders in sandboxed frames: read them too.
    const frames = await Promise.all(
      page
        .frames()
        .filter((f) => f !== page.mainFrame())
        .map((f) => f.innerText('body').catch(() => '')),
    );
    const text = [await page.innerText('main'), ...frames].join('\n');
    if (expected.test(text) || Date.now() > deadline) return text;
    await page.waitForTimeout(250);
  }
}

describe('the Web UI', () => {
  it('lists exactly the locked agents for AgentState="SAFETY_LOCKOUT": running, no task, none unlocked since', async () => {
    expect(await listed(`AgentState="SAFETY_LOCKOUT" AND AgentId STARTS_WITH "${run}"`)).toEqual([
      ['RUNNING', agentWorkflowId(ids.locked)],
    ]);
    // Every agent of the run is one running workflow; its tasks ended each with its own status.
    const all = await listed(`AgentId STARTS_WITH "${run}"`);
    expect(all.filter(([, id]) => !id?.includes('-task-')).map(([status]) => status)).toEqual([
      'RUNNING',
      'RUNNING',
      'RUNNING',
      'RUNNING',
      'RUNNING',
      'RUNNING',
    ]);
    expect(new Map(all.filter(([, id]) => id?.includes('-task-')).map(([status, id]) => [id, status]))).toEqual(
      new Map([
        [taskWorkflowId(ids.locked, 'task-1'), 'COMPLETED'],
        [taskWorkflowId(ids.unlocked, 'task-1'), 'COMPLETED'],
        [taskWorkflowId(ids.halted, 'task-1'), 'CANCELED'],
        [taskWorkflowId(ids.eperm, 'task-1'), 'COMPLETED'],
        [taskWorkflowId(ids.fatal, 'task-1'), 'FAILED'],
        [taskWorkflowId(ids.waiting, 'task-1'), 'RUNNING'],
      ]),
    );
  });

  it('shows a halted task as CANCELED, and a failed tool call as a failed activity with its error', async () => {
    expect(await openWorkflow(taskWorkflowId(ids.halted, 'task-1'), /CANCELED/)).toMatch(/CANCELED/);
    const failedRead =
      /Activity Task Failed\s+Failure Message\s+EPERM: operation not permitted, access outside the workspace: '\/etc\/hostname'/;
    const eperm = await openWorkflow(taskWorkflowId(ids.eperm, 'task-1'), failedRead);
    expect(eperm).toMatch(failedRead);
    expect(eperm).toMatch(/COMPLETED/);
    expect(eperm).toMatch(/tool fs\.read \/etc\/hostname/);
    expect(await openWorkflow(taskWorkflowId(ids.fatal, 'task-1'), /FAILED/)).toMatch(/FAILED/);
    expect(await alertFor(h, ids.fatal)).toMatchObject({ reason: { code: 'FATAL' } });
  });

  it('says why an agent is locked and how to get it going in its details', async () => {
    const why = new RegExp(`Agent ${ids.locked} · SAFETY_LOCKOUT \\(LOOP_CAP\\)`);
    const text = await openWorkflow(agentWorkflowId(ids.locked), why, 'user-metadata');
    expect(text).toMatch(why);
    expect(text).toMatch(/starry unlock .* --resume/);
  });

  it('says on a suspended task’s page that it waits for a human (the list shows it Completed)', async () => {
    const waits = /suspended, waiting for a human/;
    const text = await openWorkflow(taskWorkflowId(ids.locked, 'task-1'), waits, 'user-metadata');
    expect(text).toMatch(/Task task-1 · SUSPENDED · agent SAFETY_LOCKOUT/);
    expect(text).toMatch(new RegExp(`starry unlock ${ids.locked} --resume`));
  });

  it('lists an agent whose call waits for approval by its state, and shows the call and the commands that decide it', async () => {
    expect(await listed(`AgentState="WAITING_FOR_APPROVAL" AND AgentId STARTS_WITH "${run}"`)).toEqual(
      expect.arrayContaining([
        ['RUNNING', agentWorkflowId(ids.waiting)],
        ['RUNNING', taskWorkflowId(ids.waiting, 'task-1')],
      ]),
    );
    // The UI's markdown shows quotes as typographic ones.
    const call = /waiting for approval t1\.0 · fs\.write \{.path.:.plan\.md.,.content.:.v2.\}/;
    const agent = await openWorkflow(agentWorkflowId(ids.waiting), call, 'user-metadata');
    expect(agent).toMatch(new RegExp(`Agent ${ids.waiting} · WAITING_FOR_APPROVAL`));
    expect(agent).toMatch(call);
    expect(agent).toContain(`approve: starry approve ${ids.waiting} t1.0`);
    const task = await openWorkflow(taskWorkflowId(ids.waiting, 'task-1'), call, 'user-metadata');
    expect(task).toMatch(/Task task-1 · WAITING_FOR_APPROVAL/);
    expect(task).toContain(`deny: starry deny ${ids.waiting} t1.0 --reason`);
  });
});
