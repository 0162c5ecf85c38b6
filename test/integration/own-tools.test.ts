/**
 * A worker's own tools, made with `defineTool` and registered on a real worker (issue 15), called by a
 * scripted controller through the real dev server: offered to the model with their JSON Schemas and
 * named in the system prompt; a success; a typed error (pain with its code and suggestion); a plain
 * error (E_TOOL_FAILED pain); a transient error retried by Temporal; arguments refused by the tool's own
 * schema; a call cancelled by SYSTEM_HALT (the tool's signal aborted, nothing recorded after the halt);
 * and a `tools.allow` entry the worker does not have, refused at submit.
 */
import { z } from 'zod';
import { defineTool, ToolError } from '../../activities/tools';
import { RefusedError } from '../../client/agent-client';
import { taskWorkflowId } from '../../workflows/messages';
import { makeWorkspace, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { done, turn } from '../helpers/scenarios';
import { activitiesIn, activityRunning, historyOf, llmRequests, settledHistory } from '../helpers/workflow-history';

/** What the tools saw, per test. */
const attempts = new Map<string, number>();
let slow: { started: () => void; aborted: boolean; reason?: unknown } = { started: () => undefined, aborted: false };

const forecast = defineTool({
  name: 'weather.forecast',
  description: 'The forecast for a city.',
  input: z.object({
    city: z.string().describe('City name, in English.'),
    days: z.number().int().min(1).max(7).default(1),
  }),
  run({ city, days }) {
    if (city === 'Atlantis')
      throw ToolError.of({ code: 'ENOENT', message: `no city named ${city}`, suggestion: 'Try a city on a map.' });
    if (city === 'Nowhere') throw new Error('the forecast service said no');
    return { city, days, sky: 'clear', highC: 21 };
  },
});

const flaky = defineTool({
  name: 'flaky.fetch',
  description: 'Fetches something from a busy service.',
  input: z.object({ what: z.string() }),
  run({ what }, ctx) {
    const n = (attempts.get(ctx.callId) ?? 0) + 1;
    attempts.set(ctx.callId, n);
    if (n < 3) throw ToolError.of({ code: 'E_UNAVAILABLE', message: `busy (attempt ${n})` });
    return `${what} after ${n} attempts`;
  },
});

const wait = defineTool({
  name: 'slow.wait',
  description: 'Waits until cancelled.',
  input: z.object({}),
  run(_input, { signal }) {
    slow.started();
    return new Promise((_resolve, reject) => {
      signal.addEventListener('abort', () => {
        slow.aborted = true;
        slow.reason = signal.reason;
        reject(signal.reason);
      });
    });
  },
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'own-tools', tools: [forecast, flaky, wait] });
});
afterAll(async () => h?.stop());

it('offers the worker’s own tools with their schemas and turns what they throw into the same pain as the built-in tools’', async () => {
  const agentId = uniqueId('own');
  const config = scriptedConfig(
    writeScript([
      turn({ name: 'weather.forecast', args: { city: 'Lisbon' } }),
      turn({ name: 'weather.forecast', args: { city: 'Atlantis' } }),
      turn({ name: 'weather.forecast', args: { city: 'Nowhere' } }),
      turn({ name: 'weather.forecast', args: { town: 'Lisbon' } }),
      turn({ name: 'flaky.fetch', args: { what: 'the report' } }),
      done('All done.'),
    ]),
    makeWorkspace({}),
    { tools: { allow: ['weather.*', 'flaky.fetch', 'fs.list'] } },
  );
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'Check the weather.', config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'All done.' });
  expect(result.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([
    ['weather.forecast', 'ok', undefined],
    ['weather.forecast', 'failed', 'ENOENT'],
    ['weather.forecast', 'failed', 'E_TOOL_FAILED'],
    ['weather.forecast', 'failed', 'E_SCHEMA'],
    ['flaky.fetch', 'ok', undefined],
  ]);
  const [, typed, plain, schema] = result.toolCalls;
  expect(typed?.error).toMatchObject({
    kind: 'execution',
    source: 'weather.forecast',
    message: 'no city named Atlantis',
    suggestion: 'Try a city on a map.',
  });
  expect(plain?.error).toMatchObject({
    kind: 'execution',
    message: 'weather.forecast failed: the forecast service said no',
  });
  expect(schema?.error?.suggestion).toBe('Expected parameters: weather.forecast({ city: string, days?: integer }).');
  // The transient error was retried by Temporal, twice, within the same call.
  expect([...attempts.values()]).toEqual([3]);

  const history = await settledHistory(h.agents.client, workflowId);
  const requests = await llmRequests(history);
  // Offered in the allow-list's terms, with the JSON Schema generated from the zod input.
  expect(requests[0]?.tools.map((t) => t.name)).toEqual(['fs.list', 'weather.forecast', 'flaky.fetch']);
  expect(requests[0]?.tools.find((t) => t.name === 'weather.forecast')).toEqual({
    name: 'weather.forecast',
    description: 'The forecast for a city.',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', description: 'City name, in English.' },
        days: { type: 'integer', minimum: 1, maximum: 7, default: 1 },
      },
      required: ['city'],
    },
  });
  const system = requests[0]?.messages[0];
  expect(system && 'text' in system ? system.text : '').toContain('Tools: fs.list, weather.forecast, flaky.fetch.');
  // The model reads the pain of each failure: the code, the message and the tool's suggestion.
  const pain = requests
    .flatMap((r) => r.messages)
    .filter((m) => m.role === 'tool')
    .map((m) => ('text' in m ? m.text : ''));
  expect(
    pain.some(
      (t) => t.includes('ENOENT') && t.includes('no city named Atlantis') && t.includes('Try a city on a map.'),
    ),
  ).toBe(true);
  expect(pain.some((t) => t.includes('E_TOOL_FAILED') && t.includes('the forecast service said no'))).toBe(true);
  expect(pain.at(-1)).toContain('the report after 3 attempts');
});

it('aborts a running tool’s signal on SYSTEM_HALT and records nothing of it after the halt', async () => {
  const agentId = uniqueId('own-halt');
  const started = new Promise<void>((resolve) => {
    slow = { started: resolve, aborted: false };
  });
  const config = scriptedConfig(
    writeScript([turn({ name: 'slow.wait', args: {} }, { name: 'weather.forecast', args: { city: 'Oslo' } }), done()]),
    makeWorkspace({}),
  );
  const { taskId } = await h.agents.submit(agentId, { goal: 'Wait.', config });
  const taskWf = taskWorkflowId(agentId, taskId);
  await started;
  await activityRunning(h.agents.client, taskWf, 'tool');
  await h.agents.halt(agentId, { by: 'test' });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'CANCELLED', reason: { code: 'SYSTEM_HALT' } });
  expect(result.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([
    ['slow.wait', 'skipped', 'E_SKIPPED'],
    ['weather.forecast', 'skipped', 'E_SKIPPED'],
  ]);
  expect(slow.aborted).toBe(true);
  const activities = activitiesIn(await historyOf(h.agents.client, taskWf));
  expect(activities.map((a) => a.activityType)).toEqual(['llm', 'tool']);
  expect(activities[1]?.events).toEqual(expect.arrayContaining(['cancelRequested', 'canceled']));
  expect(activities[1]?.events).not.toContain('completed');
});

it('refuses at submit a tools.allow entry that is not a tool of the worker, naming the ones it has', async () => {
  const config = scriptedConfig(writeScript([done()]), makeWorkspace({}), {
    tools: { allow: ['weather.forecast', 'weather.radar'] },
  });
  const err = await h.agents.submit(uniqueId('own-refused'), { goal: 'x', config }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(RefusedError);
  expect((err as Error).message).toContain(
    "tools.allow: 'weather.radar' is not a tool of this worker (its tools: fs.read, fs.write, fs.list, shell.run, http.get, weather.forecast, flaky.fetch, slow.wait",
  );
});
