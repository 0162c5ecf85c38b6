/**
 * Context strategies on the wire (docs/ARCHITECTURE.md#context): what a fake OpenAI server receives
 * over a task that outgrows its `contextTokens`. With `prefix` (the default) each request repeats the
 * previous one and adds to it, except for a rare large drop; with `window` every request past the limit
 * starts differently; with `summarize` the dropped turns come back as one summary the same model wrote,
 * stored with what it covers, the transcript keeping the originals; a summary call that fails leaves the
 * task on the plain window, and its injections say so.
 */
import { rmSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { localDirStore } from '../../activities/store';
import { transcriptStore, type Manifest, type SummaryRecord } from '../../activities/transcript';
import { parseAgentConfig } from '../../core/config';
import { SUMMARY_INSTRUCTION } from '../../core/context-summary';
import type { TaskResult } from '../../core/contract';
import type { TranscriptEntry } from '../../core/llm';
import { expectWarnings, seenWarnings } from '../helpers/expected-logs';
import { openAiCompletion, startFakeServer, type FakeServer, type WireBody } from '../helpers/fake-llm-server';
import { makeWorkspace, privateDir, startHarness, uniqueId, type Harness } from '../helpers/harness';
import { replayAll } from '../helpers/workflow-history';
import { printTask } from '../../cli/live';

const TICKS = 30;
/** The worker's log line for a summary that failed (the third test provokes it). */
const SUMMARY_FAILED = /the summary call failed: the oldest turns leave the context without a summary/;
expectWarnings(SUMMARY_FAILED);
/** 1 KB of tool output a tick. */
const NOTES = 'a line of notes, forty characters long.\n'.repeat(25).slice(0, 1000);
const SUMMARY_TEXT = 'The agent read notes.md many times; it holds 25 identical lines.';

type Message = { role: string; content?: unknown };
const messagesOf = (body: WireBody | undefined) => (body?.messages ?? []) as Message[];
const isSummaryCall = (body: WireBody | undefined) => messagesOf(body)[0]?.content === SUMMARY_INSTRUCTION;
/** Input tokens as a provider would count them: about 4 bytes a token. */
const promptTokens = (body: WireBody | undefined) => Math.ceil(JSON.stringify(messagesOf(body)).length / 4);

/** What `starry logs <workflowId>` prints of a closed task. */
async function logsOf(h: Harness, workflowId: string): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  await printTask(h.agents.client, workflowId, { live: false, out });
  return Buffer.concat(chunks).toString('utf8');
}

/** True when `next` starts with every message of `prev`: the provider can reuse `prev`'s cached prefix. */
function continues(prev: Message[], next: Message[]): boolean {
  return prev.every((m, i) => JSON.stringify(m) === JSON.stringify(next[i]));
}

describe('context strategies on the wire', () => {
  let server: FakeServer;
  let h: Harness;
  let storeDir: string;
  /** Models whose summary calls fail. */
  const failing = new Set<string>();

  beforeAll(async () => {
    storeDir = privateDir('starry-context');
    server = await startFakeServer((req) => {
      const model = req.body?.model as string;
      if (isSummaryCall(req.body)) {
        if (failing.has(model)) return { status: 500, json: { error: { message: 'summaries are down' } } };
        return {
          json: openAiCompletion({ text: SUMMARY_TEXT, usage: { prompt: promptTokens(req.body), completion: 30 } }),
        };
      }
      const n = server.requests.filter((r) => r.body?.model === model && !isSummaryCall(r.body)).length;
      const usage = { prompt: promptTokens(req.body), completion: 10 };
      if (n >= TICKS) return { json: openAiCompletion({ text: 'Read it all.', usage }) };
      return {
        json: openAiCompletion({
          toolCalls: [{ id: `c${n}`, name: 'fs_read', arguments: '{"path":"notes.md"}' }],
          usage,
        }),
      };
    });
    h = await startHarness({
      name: 'context-strategies',
      activities: {
        store: localDirStore(storeDir),
        llm: { openai: { env: { STARRY_OPENAI_API_KEY: 'sk-context', OPENAI_BASE_URL: `${server.url}/v1` } } },
      },
    });
  });
  afterAll(async () => {
    await h?.stop();
    await server?.close();
    rmSync(storeDir, { recursive: true, force: true });
  });

  /** Run the 30-tick task under `model` with this context config; its result and its requests' bodies. */
  async function run(model: string, context?: { strategy: string }) {
    const workspace = makeWorkspace({ 'notes.md': NOTES });
    const agentId = uniqueId(`context-${model}`);
    const config = parseAgentConfig(
      {
        workspace: [workspace],
        verify: false,
        contextTokens: 2000,
        safety: { maxTicks: TICKS + 5 },
        retry: { initialIntervalMs: 100, maximumAttempts: 2 },
        ...(context ? { context } : {}),
      },
      `openai:${model}@${server.url}/v1`,
    );
    const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'Read notes.md again and again.', config });
    const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 120_000 });
    const bodies = server.requests.filter((r) => r.body?.model === model).map((r) => r.body);
    return { result, workflowId, bodies };
  }

  it('repeats the previous request as the prefix of the next on most ticks by default, where window never does', async () => {
    const prefix = await run('prefix');
    const window = await run('window', { strategy: 'window' });
    for (const { result, bodies } of [prefix, window]) {
      expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: TICKS });
      expect(bodies).toHaveLength(TICKS);
      // The anchored head is first and the same in every request.
      const heads = new Set(bodies.map((b) => JSON.stringify(messagesOf(b).slice(0, 2))));
      expect(heads.size).toBe(1);
    }
    const shares = (bodies: Array<WireBody | undefined>) =>
      bodies.slice(1).map((b, i) => continues(messagesOf(bodies[i]), messagesOf(b)));
    // Both outgrew the context: some request left out what the one before it had.
    expect(shares(prefix.bodies).filter((c) => !c).length).toBeGreaterThan(0);
    // Past the limit the window slides at every tick; prefix drops a large block now and then.
    const pastLimit = (bodies: Array<WireBody | undefined>) => shares(bodies).slice(shares(bodies).indexOf(false));
    expect(pastLimit(window.bodies).filter(Boolean).length).toBe(0);
    const prefixPast = pastLimit(prefix.bodies);
    expect(prefixPast.filter(Boolean).length).toBeGreaterThan(prefixPast.length * 0.6);
    // And what it sends still fits: every request within the 2,000 tokens (at the 4 bytes a token counted).
    for (const b of prefix.bodies) expect(promptTokens(b)).toBeLessThan(2000 + 400);
  });

  it('summarize: replaces the dropped turns by a stored summary, counts its tokens and keeps the originals', async () => {
    const { result, workflowId, bodies } = await run('summarize', { strategy: 'summarize' });
    expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: TICKS });
    const summaries = bodies.filter(isSummaryCall);
    expect(summaries.length).toBeGreaterThan(0);
    // The first summary call shows the model the oldest turns; a later one the summary before it too.
    expect(String(messagesOf(summaries[0])[1]?.content)).toContain('[result of fs.read');
    if (summaries.length > 1) expect(String(messagesOf(summaries[1])[1]?.content)).toContain(SUMMARY_TEXT);

    // After the first summary, every request carries it right after the head, in place of the old turns.
    const calls = bodies.filter((b) => !isSummaryCall(b));
    const first = bodies.indexOf(summaries[0]);
    const after = bodies.slice(first + 1).filter((b) => !isSummaryCall(b));
    expect(after.length).toBeGreaterThan(0);
    for (const b of after) {
      expect(messagesOf(b)[2]).toMatchObject({
        role: 'user',
        content: expect.stringMatching(/^Summary of calls 1–\d+ of this task/),
      });
      expect(String(messagesOf(b)[2]?.content)).toContain(SUMMARY_TEXT);
    }
    expect(calls.slice(0, calls.indexOf(after[0])).every((b) => !JSON.stringify(b).includes(SUMMARY_TEXT))).toBe(true);

    // Its tokens are the task's: every call's usage, the summaries' included.
    const usage = server.requests
      .filter((r) => r.body?.model === 'summarize')
      .reduce((n, r) => n + promptTokens(r.body) + (isSummaryCall(r.body) ? 30 : 10), 0);
    expect(result.tokensUsed).toBe(usage);
    expect(result.injections.filter((i) => i.kind === 'SUMMARY')).toHaveLength(summaries.length);

    // The store keeps the summary with what it covers; the transcript keeps every original turn.
    const store = localDirStore(storeDir);
    const manifest = JSON.parse((await store.get(result.transcript?.manifest as string)).toString()) as Manifest;
    expect(manifest.summary).toBeDefined();
    const record = JSON.parse((await store.get(manifest.summary!.record)).toString()) as SummaryRecord;
    expect(record.covers.entries[0]).toBe(2);
    expect(record.covers.calls[0]).toBe(1);
    expect(record.covers.calls[1]).toBeGreaterThan(1);
    expect(record.usage.outputTokens).toBe(30);
    if (summaries.length > 1) expect(record.replaces).toBeDefined();
    const message = JSON.parse((await store.get(record.message)).toString()) as { text: string };
    expect(message.text).toBe(messagesOf(calls.at(-1))[2]?.content);
    const transcript = await transcriptStore(store).transcript(
      result.transcript?.manifest as string,
      (result.transcript?.tail ?? []) as unknown as TranscriptEntry[],
    );
    expect(transcript.filter((m) => m.role === 'assistant')).toHaveLength(TICKS);
    expect(transcript.filter((m) => m.role === 'tool')).toHaveLength(TICKS - 1);
    expect(transcript.some((m) => JSON.stringify(m).includes(SUMMARY_TEXT))).toBe(false);

    // `starry logs` shows each summary where it happened.
    expect(await logsOf(h, workflowId)).toMatch(/≡ calls 1–\d+ summarized \(\d+ tokens\):\n.*many times/);

    const reports = await replayAll(h.agents.client, [workflowId]);
    expect(reports.filter((r) => !r.ok)).toEqual([]);
  });

  it('summarize: a summary call that fails leaves the task on the plain window, and says so', async () => {
    failing.add('failsum');
    const { result, workflowId, bodies } = await run('failsum', { strategy: 'summarize' });
    expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: TICKS });
    const summaries = bodies.filter(isSummaryCall);
    // Each summary call tried twice (the retry policy), then given up.
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    const calls = bodies.filter((b) => !isSummaryCall(b));
    expect(calls).toHaveLength(TICKS);
    expect(calls.every((b) => !JSON.stringify(messagesOf(b).slice(2, 3)).includes('Summary of calls'))).toBe(true);
    const notes = (result as TaskResult).injections.filter((i) => i.kind === 'SUMMARY');
    expect(notes.length).toBe(summaries.length / 2);
    // The worker's log says so too, once a failed summary.
    expect(seenWarnings(SUMMARY_FAILED)).toBe(notes.length);
    expect(await logsOf(h, workflowId)).toMatch(
      /≡ no summary of calls 1–\d+ \(they left the context without one\): .*summaries are down/,
    );
    expect(notes[0]?.text).toMatch(
      /^No summary of calls 1–\d+: the summary call failed \(.*summaries are down.*\); they left the context without one\.$/,
    );
    // The window still fits and still drops a block at once: the requests are prefix's.
    const continued = calls.slice(1).filter((b, i) => continues(messagesOf(calls[i]), messagesOf(b))).length;
    expect(continued).toBeGreaterThan(calls.length * 0.6);
  });
});
