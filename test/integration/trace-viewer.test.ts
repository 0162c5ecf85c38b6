/**
 * The dev trace viewer (dev/trace-viewer.ts, what `starry dev --otel` serves) as a person sees it, in a
 * real browser (playwright-core driving Debian's chromium): a traced worker's EPERM task in the list of
 * recent traces, and its waterfall with the task, LLM and tool spans and the pain event.
 */
import zlib from 'node:zlib';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../../bench/chromium';
import { taskStateLookup } from '../../dev/task-state';
import { eventually } from '../../dev/poll';
import { address, startHarness, uniqueId, type Harness } from '../helpers/harness';
import { startOtlpReceiver, traceOf, tracingTo, type OtlpReceiver } from '../helpers/otlp-receiver';
import { done, runScenario, SCENARIOS, turn, type ScenarioRun } from '../helpers/scenarios';

jest.setTimeout(120_000);

let receiver: OtlpReceiver;
let h: Harness;
let browser: Browser;
let page: Page;
let eperm: ScenarioRun;
let traceId: string;
/** The viewer's lookup of a running task's state, as `starry dev --otel` gives it, on the run's server. */
const states = taskStateLookup(() => ({ address: address(), namespace: 'default' }));
beforeAll(async () => {
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  receiver = await startOtlpReceiver({ taskState: states.taskState });
  h = await startHarness({ name: 'trace-viewer', tracing: tracingTo(receiver.url) });
  eperm = await runScenario(h, SCENARIOS.eperm);
  traceId = (await traceOf(receiver, eperm))[0]!.traceId;
});
afterAll(async () => {
  await states.close();
  await browser?.close();
  await h?.stop();
  await receiver?.close();
});

/** The waterfall's rows: each span's name, as the page shows it. */
const rows = () => page.locator('summary.row .name b').allInnerTexts();

describe('the trace viewer, in a browser', () => {
  it("lists the task's trace: its root span, agent, task, outcome, span count and an error marker", async () => {
    await page.goto(receiver.url);
    const row = page.locator('tbody tr', { hasText: eperm.agentId });
    expect(await row.locator('td').allInnerTexts()).toEqual([
      expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/),
      `invoke_agent\n${traceId}`,
      eperm.agentId,
      eperm.taskId,
      'COMPLETED',
      expect.stringMatching(/^\d+(\.\d+)? (ms|s)$/),
      '15',
      '✖ 2', // the refused read and its attempt
    ]);
  });

  it("shows the trace as a waterfall: the task span, its chat and execute_tool spans nested beneath, the EPERM call's pain", async () => {
    await page.locator('tbody tr', { hasText: eperm.agentId }).getByRole('link').click();
    await page.waitForURL(`${receiver.url}/traces/${traceId}`);
    const names = await rows();
    // A tick: the LLM call, then the tool call it asked for, each with its Temporal attempt beneath.
    const tick = (tool?: string) => [
      'chat turns.json',
      'RunActivity:llm',
      ...(tool ? [`execute_tool ${tool}`, 'RunActivity:tool'] : []),
    ];
    expect(names).toEqual(['invoke_agent', ...tick('fs.read'), ...tick('fs.list'), ...tick('fs.read'), ...tick()]);
    const failed = page.locator('summary.row', { hasText: 'execute_tool fs.read' }).first();
    expect(await failed.locator('.chip').allInnerTexts()).toEqual(['error', '◆ starry.pain EPERM']);
    // Nested: a tool call sits one step in from the task, its attempt two.
    const indent = (name: string) => page.locator('summary.row .name', { hasText: name }).first().getAttribute('style');
    expect([
      await indent('invoke_agent'),
      await indent('execute_tool fs.read'),
      await indent('RunActivity:tool'),
    ]).toEqual(['padding-left:0px', 'padding-left:16px', 'padding-left:32px']);
    // Every bar lies on the time axis, inside the task's.
    const bars = await page.locator('.bar').evaluateAll((els) => els.map((e) => e.getBoundingClientRect()));
    for (const b of bars.slice(1)) {
      expect(b.left).toBeGreaterThanOrEqual(bars[0]!.left - 1);
      expect(b.right).toBeLessThanOrEqual(bars[0]!.right + 1);
    }
  });

  it("opens a span's attributes and its starry.pain event on a click", async () => {
    const failed = page
      .locator('details', { has: page.locator('summary.row', { hasText: 'execute_tool fs.read' }) })
      .first();
    expect(await failed.locator('.info').isVisible()).toBe(false);
    await failed.locator('summary').click();
    const info = failed.locator('.info');
    await info.waitFor();
    const text = await info.innerText();
    expect(text).toContain('gen_ai.tool.name\tfs.read');
    expect(text).toContain('error.type\tEPERM');
    expect(text).toMatch(/event starry\.pain at \+[\d.]+ (ms|s)\n/);
    for (const line of [
      'starry.pain.code\tEPERM',
      'starry.pain.kind\texecution',
      'starry.pain.level\t3',
      'starry.pain.source\tfs.read',
      'starry.pain.consecutive_failures\t1',
    ])
      expect(text).toContain(line);
  });

  it("leads from a task's workflow id to its trace, and says so when a trace is not (yet) here", async () => {
    await page.goto(`${receiver.url}/tasks/${eperm.workflowId}`);
    expect(page.url()).toBe(`${receiver.url}/traces/${traceId}`);
    const missing = await page.goto(`${receiver.url}/traces/${'0'.repeat(31)}1`);
    expect(missing?.status()).toBe(404);
    expect(await page.locator('main').innerText()).toMatch(/^No span of trace 0{31}1 has arrived here\./);
    const bad = await page.goto(`${receiver.url}/traces/not-an-id`);
    expect([bad?.status(), (await page.locator('body').innerText()).trim()]).toEqual([
      400,
      'not a trace id: a trace id is 32 hex digits (e.g. from `starry status --json`)',
    ]);
    // A malformed escape is a bad id too, not a crash of the dev process.
    expect((await fetch(`${receiver.url}/traces/%E0`)).status).toBe(400);
    expect((await fetch(`${receiver.url}/tasks/%E0`)).status).toBe(404);
    expect((await fetch(receiver.url)).status).toBe(200);
  });

  it('shows a task that waits for a human as such, in the list and on its page, not as running', async () => {
    const agentId = uniqueId('trace-wait');
    const run = runScenario(
      h,
      {
        name: 'trace-wait',
        goal: 'write a file',
        turns: [turn({ name: 'fs.write', args: { path: 'a.md', content: 'x' } }), done()],
        config: { tools: { approval: { ask: ['fs.write'] } } },
      },
      { agentId },
    );
    await eventually('the call to wait for approval', async () =>
      (await h.agents.approvals(agentId).catch(() => undefined))?.approvals.length === 1 ? true : undefined,
    );
    // Its first LLM call's span has come (spans come as they end); the task span comes when it ends.
    const workflowId = await eventually(
      'a span of the waiting task',
      async () =>
        receiver.spans.find((s) => String(s.attributes['temporal.workflow.id'] ?? '').includes(agentId))?.attributes[
          'temporal.workflow.id'
        ] as string | undefined,
    );
    const waitingTrace = receiver.spans.find((s) => s.attributes['temporal.workflow.id'] === workflowId)!.traceId;
    await page.goto(receiver.url);
    const row = page.locator('tbody tr', { hasText: waitingTrace });
    await expect(row.locator('td').nth(4).innerText()).resolves.toBe(
      `waiting for a human: \`starry approvals ${agentId}\``,
    );
    expect(await row.locator('td').nth(2).innerText()).toBe(agentId);
    await row.getByRole('link').click();
    await expect(page.locator('.facts').innerText()).resolves.toContain(
      `outcome waiting for a human: \`starry approvals ${agentId}\``,
    );
    expect(workflowId).toContain(agentId);
    await h.agents.decide(agentId, {
      callId: (await h.agents.approvals(agentId)).approvals[0]!.callId,
      decision: 'deny',
      reason: 'not now',
    });
    await run;
  });

  it('refuses a gzip body that unpacks beyond its bound, and keeps serving', async () => {
    const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024));
    const res = await fetch(`${receiver.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' },
      body: bomb,
    });
    expect([res.status, await res.text()]).toEqual([413, 'a request that unpacks to at most 33554432 bytes\n']);
    expect((await fetch(receiver.url)).status).toBe(200);
  });

  it('shows a hostile span name and attribute as text: nothing in a span runs in the page', async () => {
    const evil = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>';
    const provider = new BasicTracerProvider();
    provider.addSpanProcessor(new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${receiver.url}/v1/traces` })));
    const span = provider.getTracer('evil').startSpan(evil, { attributes: { note: evil } });
    span.addEvent(evil, { why: evil });
    span.end();
    await provider.forceFlush();
    await provider.shutdown();
    const id = span.spanContext().traceId;
    await page.goto(`${receiver.url}/traces/${id}?open=all`);
    expect(await page.title()).toBe(evil); // the name as text: the script in it did not set the title
    expect(await page.locator('img').count()).toBe(0);
    expect(await rows()).toEqual([expect.stringContaining(evil)]);
    expect(await page.locator('.info').innerText()).toContain(`note\t${evil}`);
    await page.goto(receiver.url);
    expect(await page.locator('tbody').innerText()).toContain(evil);
    expect(await page.title()).toBe('recent traces');
  });
});
