/**
 * The local offline model (`local:PATH.gguf`, SmolLM2-135M-Instruct fetched by setup) driving the real
 * loop through a real worker. A 135M model's choices are not the point: the grammar is. Whatever it
 * decides, every tool call it makes is schema-valid and the run ends by itself within its limits.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { CancelledFailure } from '@temporalio/common';
import { parseAgentConfig } from '../../core/config';
import type { LlmResponse } from '../../core/llm';
import { TOOL_NAMES } from '../../core/tools';
import {
  createLocalProvider,
  DEFAULT_LOCAL_MODEL,
  localModelProcesses,
  stopLocalModels,
} from '../../activities/llm/local';
import { callLlm } from '../../activities/llm/provider';
import { projectRoot } from '../../dev/paths';
import { makeWorkspace, startHarness, uniqueId, type Harness } from '../helpers/harness';
import { llmRequest, quietActivityEnv } from '../helpers/llm-activity';
import { parseLlmSpec } from '../../core/llm-spec';

const modelPath = path.join(projectRoot(), DEFAULT_LOCAL_MODEL);
const MAX_TICKS = 6;
const TOKEN_BUDGET = 6000;
// No call reads or writes more than the model's context holds (8192 tokens): the most one call can add.
const ONE_CALL = 8192;

let h: Harness;
// jest reads testTimeout only globally, not per project: a model on 2 cores needs explicit timeouts.
beforeAll(async () => {
  if (!existsSync(modelPath))
    throw new Error(`${modelPath} is missing: run \`npm run setup\` (scripts/fetch-model.sh fetches it)`);
  h = await startHarness({ name: 'local' });
}, 60_000);
afterAll(async () => {
  await h?.stop();
  stopLocalModels();
});

describe('the local model', () => {
  it('drives the real loop with only schema-valid tool calls and ends by itself within its limits', async () => {
    const workspace = makeWorkspace({
      'notes.md': '# Notes\nThe launch is on Tuesday. Bring the blue folder.\n',
      'todo.txt': '1. read notes.md\n2. answer in one sentence\n',
    });
    const config = parseAgentConfig(
      {
        workspace: [workspace],
        safety: { maxTicks: MAX_TICKS, tokenBudget: TOKEN_BUDGET },
        retry: { initialIntervalMs: 100, maximumAttempts: 2 },
      },
      `local:${modelPath}`,
    );
    const agentId = uniqueId('local');
    const started = Date.now();
    const { taskId } = await h.agents.submit(agentId, {
      goal: 'Read notes.md in the workspace and tell me in one sentence when the launch is.',
      config,
    });
    const result = await h.agents.waitForTask(agentId, taskId);
    const seconds = (Date.now() - started) / 1000;

    // It ended by itself: a final answer, or a breaker that suspended it; never a failure of ours.
    expect(['COMPLETED', 'SUSPENDED']).toContain(result.outcome);
    if (result.outcome === 'COMPLETED') {
      expect(result.finalText).toEqual(expect.any(String));
      expect(result.reason).toBeUndefined();
    } else {
      expect(['LOOP_CAP', 'BUDGET_EXHAUSTED', 'REPEATED_FAILURE', 'ERROR_CASCADE']).toContain(result.reason?.code);
    }
    expect(result.ticks).toBeGreaterThanOrEqual(1);
    expect(result.ticks).toBeLessThanOrEqual(MAX_TICKS);
    expect(result.tokensUsed).toBeGreaterThan(0);
    expect(result.tokensUsed).toBeLessThanOrEqual(TOKEN_BUDGET + ONE_CALL);
    if (result.reason?.code === 'BUDGET_EXHAUSTED') expect(result.tokensUsed).toBeGreaterThanOrEqual(TOKEN_BUDGET);

    // The grammar at work: known tools, arguments that pass the registry's schema, one call per turn.
    for (const call of result.toolCalls) {
      expect(TOOL_NAMES).toContain(call.name);
      expect(['E_INVALID_JSON', 'E_UNKNOWN_TOOL', 'E_SCHEMA']).not.toContain(call.error?.code);
      expect(call.tick).toBeLessThanOrEqual(result.ticks);
    }
    const perTick = new Map<number, number>();
    for (const call of result.toolCalls) perTick.set(call.tick, (perTick.get(call.tick) ?? 0) + 1);
    for (const n of perTick.values()) expect(n).toBe(1);

    const status = await h.agents.status(agentId);
    expect(status).toMatchObject({
      agentState: result.agentState,
      tokensUsed: result.tokensUsed,
      tokenBudget: TOKEN_BUDGET,
    });

    // One model process served every tick of the run.
    const procs = localModelProcesses().filter((p) => p.modelPath === modelPath);
    expect(procs).toHaveLength(1);
    expect(procs[0]!.calls).toBe(result.ticks);
    const { calls, generationMs, loadMs } = procs[0]!;
    console.info(
      `local model ${path.basename(modelPath)}: ${result.outcome}${result.reason ? ` (${result.reason.code})` : ''} after ${result.ticks} ticks, ` +
        `${result.toolCalls.length} tool calls, ${result.tokensUsed} tokens; ${(generationMs / calls / 1000).toFixed(2)} s per LLM call, ` +
        `${(seconds / result.ticks).toFixed(2)} s per tick end to end (model load ${(loadMs / 1000).toFixed(2)} s once)`,
    );
  }, 300_000);

  it('stops a call at once when the activity is cancelled, even while the model loads, and keeps the process for the next call', async () => {
    stopLocalModels(); // a fresh process, so the cancellation lands while the model is still loading
    const local = createLocalProvider();
    const spec = { provider: 'local' as const, modelPath };
    const req = llmRequest({ llm: parseLlmSpec(`local:${modelPath}`), maxOutputTokens: 2048 });

    const env = quietActivityEnv();
    const cancelled = env.run(() => callLlm(local, req, spec));
    setTimeout(() => env.cancel(), 50);
    await expect(cancelled).rejects.toBeInstanceOf(CancelledFailure);
    const started = localModelProcesses().find((p) => p.modelPath === modelPath);
    expect(started?.pid).toEqual(expect.any(Number));

    const answer: LlmResponse = await quietActivityEnv().run(() => callLlm(local, { ...req, callNumber: 2 }, spec));
    expect(answer.toolCalls.length + (answer.text !== undefined ? 1 : 0)).toBe(1);
    for (const call of answer.toolCalls) expect(TOOL_NAMES).toContain(call.name);
    expect(answer.usage.inputTokens).toBeGreaterThan(0);
    expect(answer.usage.outputTokens).toBeGreaterThan(0);
    expect(answer.usage.outputTokens).toBeLessThanOrEqual(2048);
    expect(localModelProcesses().find((p) => p.modelPath === modelPath)).toMatchObject({ pid: started?.pid, calls: 1 });
  }, 120_000);
});
