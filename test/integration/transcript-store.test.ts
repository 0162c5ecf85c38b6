/**
 * Long-running agents at constant history cost (the transcript in the content store): a tick adds the
 * same few KB of history whatever the context holds, the task continues as new when Temporal suggests
 * it with its counters and transcript intact, and a blob missing from the store is a clear failure.
 */
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { localDirStore, storeFromEnv } from '../../activities/store';
import { transcriptStore } from '../../activities/transcript';
import type { TaskResult } from '../../core/contract';
import type { DevServer } from '../../dev/dev-server';
import { done, missing, read, turn, USAGE, type ScriptedTurn } from '../helpers/scenarios';
import {
  makeWorkspace,
  privateDir,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
  startEarlyContinueServer,
} from '../helpers/harness';
import { llmInputs, replayAll, settledHistory } from '../helpers/workflow-history';
import { replayHistory } from '../../dev/replay';
import { taskWorkflowId } from '../../workflows/messages';

/** 50 KB: under the tools' 64 KB output cap, three times what a result keeps in the context. */
const BIG = Array.from(
  { length: 1000 },
  (_, i) => `line ${String(i).padStart(5, '0')} of a file the agent reads at every tick\n`,
)
  .join('')
  .slice(0, 50_000);

/** The history of every run of a task workflow: events and bytes, as the server counts them. */
async function historySize(
  client: Client,
  workflowId: string,
): Promise<{ events: number; bytes: number; runs: number }> {
  const total = { events: 0, bytes: 0, runs: 0 };
  for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    const info = (await client.workflow.getHandle(workflowId, run.runId).describe()).raw.workflowExecutionInfo;
    total.events += Number(info?.historyLength ?? 0);
    total.bytes += Number(info?.historySizeBytes ?? 0);
    total.runs++;
  }
  return total;
}

describe('the transcript in the content store', () => {
  let h: Harness;
  let storeDir: string;

  beforeAll(async () => {
    storeDir = privateDir('starry-store');
    // Uncached, so a blob deleted from the folder is missing for the worker too.
    h = await startHarness({ name: 'transcript-store', activities: { store: localDirStore(storeDir) } });
  });
  afterAll(async () => h?.stop());

  async function runTicks(ticks: number, file: string): Promise<{ result: TaskResult; workflowId: string }> {
    const workspace = makeWorkspace({ 'big.txt': file });
    const turns: ScriptedTurn[] = [
      ...Array.from({ length: ticks - 1 }, () => turn(read('big.txt'))),
      done('Read it all.'),
    ];
    const agentId = uniqueId('history');
    const config = scriptedConfig(writeScript(turns), workspace, { safety: { maxTicks: ticks + 5 } });
    const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'Read big.txt again and again.', config });
    return { result: await h.agents.waitForTask(agentId, taskId, { timeoutMs: 120_000 }), workflowId };
  }

  it('grows the history by the same few KB a tick at 10 and at 60 ticks, however large the tool output', async () => {
    const short = await runTicks(10, BIG);
    const long = await runTicks(60, BIG);
    expect(short.result).toMatchObject({ outcome: 'COMPLETED', ticks: 10 });
    expect(long.result).toMatchObject({ outcome: 'COMPLETED', ticks: 60 });
    const a = await historySize(h.agents.client, short.workflowId);
    const b = await historySize(h.agents.client, long.workflowId);
    const perTick = a.bytes / 10;
    const growth = (b.bytes - a.bytes) / 50;
    // Flat: the 50 extra ticks cost what the first 10 did a tick (the whole context would make it grow).
    expect(growth).toBeLessThan(perTick * 1.25);
    // About 4 KB, 1.2 KB of it Temporal's own three workflow tasks a tick (docs/BENCHMARKS.md).
    expect(growth).toBeLessThan(4.5 * 1024);
    // No LLM input carries the context: every one is a delta of references.
    const inputs = llmInputs(await settledHistory(h.agents.client, long.workflowId));
    const largest = Math.max(...inputs.map((i) => JSON.stringify(i).length));
    expect(largest).toBeLessThan(16 * 1024);
    expect(inputs.every((i) => i.messages === undefined && i.context !== undefined)).toBe(true);

    // The whole transcript is in the store: every answer and every result, the big one cut to 16,000 characters.
    const transcript = await transcriptStore(localDirStore(storeDir)).transcript(
      long.result.transcript?.manifest as string,
      [],
    );
    expect(transcript.filter((m) => m.role === 'assistant')).toHaveLength(60);
    const results = transcript.filter((m) => m.role === 'tool');
    expect(results).toHaveLength(59);
    expect(results.every((m) => m.role === 'tool' && m.text.endsWith('[cut at 16000 characters]'))).toBe(true);

    const reports = await replayAll(h.agents.client, [short.workflowId, long.workflowId]);
    expect(reports.filter((r) => !r.ok)).toEqual([]);
  });

  it('fails the task naming the blob when the store lost one, and pauses the agent for a human', async () => {
    const workspace = makeWorkspace({ 'notes.md': 'notes\n' });
    const agentId = uniqueId('lost-blob');
    // The loop cap suspends it after 2 ticks; the resumed run's first call extends the stored context.
    const config = scriptedConfig(writeScript([turn(read('notes.md')), turn(read('notes.md')), done()]), workspace, {
      safety: { maxTicks: 2 },
    });
    const { taskId } = await h.agents.submit(agentId, { goal: 'Read the notes.', config });
    expect(await h.agents.waitForTask(agentId, taskId)).toMatchObject({
      outcome: 'SUSPENDED',
      reason: { code: 'LOOP_CAP' },
    });

    for (const d of readdirSync(storeDir)) rmSync(path.join(storeDir, d), { recursive: true, force: true });
    await h.agents.unlock(agentId, { resume: true, by: 'test' });
    const result = await h.agents.waitForTask(agentId, taskId, { after: (r) => r.outcome !== 'SUSPENDED' });
    expect(result).toMatchObject({
      outcome: 'FAILED',
      agentState: 'ERROR_PAUSED',
      error: { code: 'E_BLOB_MISSING', kind: 'fatal' },
    });
    expect(result.error?.message).toMatch(/transcript blob sha256:[0-9a-f]{64} is missing from directory /);
    expect(result.error?.message).toContain(storeDir);
  });
});

describe('a task longer than one history', () => {
  let server: DevServer;
  let h: Harness;

  beforeAll(async () => {
    // A server that suggests continue-as-new early, so a short task moves through several histories.
    server = await startEarlyContinueServer('can', 60);
    h = await startHarness({ name: 'continue-as-new', address: server.address });
  });
  afterAll(async () => {
    await h?.stop();
    await server?.stop();
  });

  it('continues as new with its counters, tokens, loop cap and transcript intact', async () => {
    const workspace = makeWorkspace({ 'notes.md': 'notes\n' });
    const agentId = uniqueId('long');
    // 3 reads, then the same missing file 3 times (the repeat alert spans runs), then reads again.
    const turns: ScriptedTurn[] = [
      ...Array.from({ length: 3 }, () => turn(read('notes.md'))),
      ...Array.from({ length: 3 }, () => turn(missing(1))),
      ...Array.from({ length: 9 }, () => turn(read('notes.md'))),
      done('All read.'),
    ];
    const config = scriptedConfig(writeScript(turns), workspace, { safety: { maxTicks: 30 } });
    const { taskId } = await h.agents.submit(agentId, { goal: 'Read the notes many times.', config });
    await h.agents.message(agentId, 'Keep reading.', 'ana');
    const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 120_000 });

    expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: 16, finalText: 'All read.' });
    expect(result.tokensUsed).toBe(16 * (USAGE.inputTokens + USAGE.outputTokens));
    const workflowId = taskWorkflowId(agentId, taskId);
    const size = await historySize(h.agents.client, workflowId);
    expect(size.runs).toBeGreaterThan(2);
    // Every run, the ones that ended by continuing as new included, replays against the current code.
    for await (const run of h.agents.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
      const report = await replayHistory(
        await h.agents.client.workflow.getHandle(workflowId, run.runId).fetchHistory(),
        `${workflowId}/${run.runId}`,
      );
      expect(report).toMatchObject({ ok: true });
    }
    // The third identical failure raised the repeat alert, wherever the runs were cut.
    expect(result.injections.filter((i) => i.kind === 'REPEAT_ALERT')).toHaveLength(1);
    expect(result.toolCalls.map((c) => c.status)).toEqual([
      ...Array(3).fill('ok'),
      ...Array(3).fill('failed'),
      ...Array(9).fill('ok'),
    ]);
    const status = await h.agents.status(agentId);
    expect(status.tokensUsed).toBe(result.tokensUsed);

    // The transcript follows the manifests back through every run.
    const transcript = await transcriptStore(storeFromEnv()).transcript(result.transcript?.manifest as string, []);
    expect(transcript[0]?.role).toBe('system');
    expect(transcript.filter((m) => m.role === 'assistant')).toHaveLength(16);
  });

  it('still counts the loop cap from the task’s start across runs', async () => {
    const workspace = makeWorkspace({ 'notes.md': 'notes\n' });
    const agentId = uniqueId('capped');
    const config = scriptedConfig(writeScript(Array.from({ length: 20 }, () => turn(read('notes.md')))), workspace, {
      safety: { maxTicks: 12 },
    });
    const { taskId } = await h.agents.submit(agentId, { goal: 'Read forever.', config });
    const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 120_000 });
    expect(result).toMatchObject({ outcome: 'SUSPENDED', ticks: 12, reason: { code: 'LOOP_CAP' } });
    expect((await historySize(h.agents.client, taskWorkflowId(agentId, taskId))).runs).toBeGreaterThan(1);
  });
});
