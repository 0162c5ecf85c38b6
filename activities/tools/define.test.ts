import { z } from 'zod';
import { defineTool, runTool, ToolError, ToolRegistry, type ToolRequest } from '.';
import { toolsConfig } from './test-support';

const weather = defineTool({
  name: 'weather.forecast',
  description: 'The forecast for a city.',
  input: z.object({ city: z.string() }),
  run: ({ city }) => ({ city, sky: 'clear' }),
});

describe('defineTool', () => {
  it('refuses a definition the model could not use, naming what is wrong', () => {
    const base = { description: 'd', input: z.object({}), run: () => 1 };
    expect(() => defineTool({ ...base, name: 'rm -rf' })).toThrow(/defineTool\("rm -rf"\): the name must be a letter/);
    expect(() => defineTool({ ...base, name: 'x'.repeat(65) })).toThrow(/at most 64 characters/);
    expect(() => defineTool({ ...base, name: 'ok', description: ' ' })).toThrow(
      /the description must be 1 to 1024 characters/,
    );
    expect(() => defineTool({ ...base, name: 'ok', input: z.string() as unknown as z.ZodObject })).toThrow(
      /input must be a zod object schema/,
    );
  });

  it('refuses two tools of one name on a worker, a built-in one included', () => {
    expect(() => new ToolRegistry([weather, weather])).toThrow('two tools are named weather.forecast');
    expect(
      () => new ToolRegistry([defineTool({ name: 'fs.read', description: 'mine', input: z.object({}), run: () => 1 })]),
    ).toThrow('two tools are named fs.read');
  });

  it('declares the tool to the model with the JSON Schema of its input', () => {
    expect(new ToolRegistry([weather]).specs().at(-1)).toEqual({
      name: 'weather.forecast',
      description: 'The forecast for a city.',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    });
  });
});

describe('runTool with a worker’s own tool', () => {
  const request = (name: string, args: unknown, tools = toolsConfig()): ToolRequest => ({
    name,
    args,
    tick: 1,
    workspace: ['/ws'],
    tools,
    toolTimeoutMs: 1000,
  });
  const throwing = (err: unknown) =>
    defineTool({
      name: 'thrower',
      description: 'Throws.',
      input: z.object({}),
      run: () => {
        throw err;
      },
    });
  const run = (tool: ReturnType<typeof throwing>, args: unknown = {}) =>
    runTool(request(tool.name, args), undefined, { registry: new ToolRegistry([tool]) });

  it('passes the parsed input and returns what the tool returns', async () => {
    expect(
      await runTool(request('weather.forecast', { city: 'Oslo' }), undefined, {
        registry: new ToolRegistry([weather]),
      }),
    ).toEqual({ success: true, data: { city: 'Oslo', sky: 'clear' } });
  });

  it('keeps a typed error’s code, kind and suggestion, with the tool as its source', async () => {
    const result = await run(
      throwing(
        ToolError.of(
          { code: 'E_RATE_LIMIT', message: 'slow down', suggestion: 'Wait a minute.' },
          { retryAfterMs: 2000 },
        ),
      ),
    );
    expect(result).toEqual({
      success: false,
      retryAfterMs: 2000,
      error: {
        code: 'E_RATE_LIMIT',
        kind: 'transient',
        source: 'thrower',
        message: 'slow down',
        suggestion: 'Wait a minute.',
      },
    });
  });

  it('classifies what else a tool throws: a plain error is E_TOOL_FAILED pain, a Node code (also on the cause) is read like a built-in tool’s', async () => {
    expect((await run(throwing(new Error('no such city')))).error).toEqual({
      code: 'E_TOOL_FAILED',
      kind: 'execution',
      source: 'thrower',
      message: 'thrower failed: no such city',
    });
    expect(await run(throwing('a string'))).toMatchObject({
      error: { code: 'E_TOOL_FAILED', message: 'thrower failed: a string' },
    });
    expect(
      (await run(throwing(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })))).error,
    ).toMatchObject({ code: 'ECONNREFUSED', kind: 'transient' });
    const fetchFailed = new TypeError('fetch failed', {
      cause: Object.assign(new Error('getaddrinfo EAI_AGAIN api'), { code: 'EAI_AGAIN' }),
    });
    expect((await run(throwing(fetchFailed))).error).toMatchObject({
      code: 'EAI_AGAIN',
      kind: 'transient',
      message: expect.stringContaining('thrower failed: fetch failed'),
    });
    expect((await run(throwing(new DOMException('The operation timed out.', 'TimeoutError')))).error).toMatchObject({
      code: 'ETIMEDOUT',
      kind: 'transient',
    });
  });

  it('refuses arguments its schema refuses, and a result larger than the task allows', async () => {
    const checked = await runTool(request('weather.forecast', { town: 'Oslo' }), undefined, {
      registry: new ToolRegistry([weather]),
    });
    expect(checked.error).toMatchObject({
      code: 'E_SCHEMA',
      kind: 'execution',
      suggestion: 'Expected parameters: weather.forecast({ city: string }).',
    });
    const big = defineTool({ name: 'big', description: 'Too much.', input: z.object({}), run: () => 'x'.repeat(2000) });
    const result = await runTool(request('big', {}, toolsConfig({ maxOutputBytes: 1000 })), undefined, {
      registry: new ToolRegistry([big]),
    });
    expect(result.error).toMatchObject({
      code: 'E_OUTPUT_TOO_LARGE',
      kind: 'execution',
      message: 'E_OUTPUT_TOO_LARGE: big returned 2000 bytes; tool output is capped at 1000 bytes',
    });
  });

  it('rejects with the abort reason when the call is cancelled: a cancelled call is not pain', async () => {
    const waits = defineTool({
      name: 'waits',
      description: 'Waits.',
      input: z.object({}),
      run: (_i, { signal }) =>
        new Promise((_r, reject) => signal.addEventListener('abort', () => reject(new Error('stopped')))),
    });
    const controller = new AbortController();
    const running = runTool(request('waits', {}), controller.signal, { registry: new ToolRegistry([waits]) });
    const reason = new Error('SYSTEM_HALT');
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
  });

  it('offers a tool only to an agent whose tools.allow names it', async () => {
    const result = await runTool(
      request('weather.forecast', { city: 'Oslo' }, toolsConfig({ allow: ['fs.*'] })),
      undefined,
      { registry: new ToolRegistry([weather]) },
    );
    expect(result.error).toMatchObject({
      code: 'E_UNKNOWN_TOOL',
      message: "Tool 'weather.forecast' is not offered to this agent.",
    });
  });
});
