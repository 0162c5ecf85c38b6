import { promises as fs } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createToolActivities, runTool, type ToolRequest } from './index';
import { makeWorkspace, testPolicy, toolsConfig, type TempWorkspace } from './test-support';

/** An activity environment that keeps the expected failures out of the test output. */
const mockEnvironment = () => new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });

describe('runTool', () => {
  it('returns an unknown tool as an execution failure without running anything', async () => {
    const result = await runTool({
      name: 'fs.delete',
      args: {},
      tick: 1,
      workspace: ['/'],
      tools: toolsConfig(),
      toolTimeoutMs: 1000,
    });
    expect(result).toMatchObject({
      success: false,
      error: { code: 'E_UNKNOWN_TOOL', kind: 'execution', source: 'fs.delete' },
    });
  });
});

describe('the tool activity', () => {
  let ws: TempWorkspace;
  const request = (name: string, args: unknown, overrides: Partial<ToolRequest> = {}): ToolRequest => ({
    name,
    args,
    tick: 3,
    workspace: [ws.root],
    tools: toolsConfig(),
    toolTimeoutMs: 10_000,
    ...overrides,
  });

  let policy: ReturnType<typeof testPolicy>;
  beforeEach(async () => {
    ws = await makeWorkspace();
    policy = testPolicy(ws, { httpAllow: ['127.0.0.1:*'] });
  });
  afterEach(() => ws.cleanup());

  it('returns a success as data', async () => {
    await fs.writeFile(path.join(ws.root, 'a.txt'), 'abc');
    const env = mockEnvironment();
    const result = await env.run(createToolActivities(policy).tool, request('fs.read', { path: 'a.txt' }));
    expect(result).toEqual({
      success: true,
      data: { path: path.join(ws.root, 'a.txt'), content: 'abc', bytes: 3, truncated: false },
    });
  });

  it('throws an execution error as a non-retryable ApplicationFailure carrying the NormalizedError (a red activity, pain for the agent)', async () => {
    const env = mockEnvironment();
    const failure = await env
      .run(createToolActivities(policy).tool, request('fs.read', { path: '/root/secret.txt' }))
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'EPERM', nonRetryable: true, message: expect.stringMatching(/^EPERM: /) });
    expect((failure as ApplicationFailure).details?.[0]).toMatchObject({
      code: 'EPERM',
      kind: 'execution',
      source: 'fs.read',
    });
    expect((failure as ApplicationFailure).nextRetryDelay).toBeUndefined();
  });

  it('throws a fatal error as a non-retryable ApplicationFailure carrying the NormalizedError', async () => {
    const env = mockEnvironment();
    // Missing, and no worker can make it (a directory below a file): a missing root it can make, it makes.
    await fs.writeFile(path.join(ws.base, 'file'), '');
    const missing = path.join(ws.base, 'file', 'gone');
    const failure = await env
      .run(createToolActivities(policy).tool, request('fs.list', {}, { workspace: [missing] }))
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'E_INTERNAL', nonRetryable: true });
    expect((failure as ApplicationFailure).details?.[0]).toMatchObject({ code: 'E_INTERNAL', kind: 'fatal' });
  });

  it('throws a transient error as a retryable ApplicationFailure with the server-requested delay', async () => {
    const server = http
      .createServer((_req, res) => res.writeHead(429, { 'retry-after': '7' }).end())
      .listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const env = mockEnvironment();
      const failure = await env
        .run(
          createToolActivities(policy).tool,
          request(
            'http.get',
            { url: `http://127.0.0.1:${port}/` },
            { tools: toolsConfig({ httpAllow: [`127.0.0.1:${port}`] }) },
          ),
        )
        .catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect(failure).toMatchObject({ type: 'E_RATE_LIMIT', nonRetryable: false, nextRetryDelay: 7000 });
    } finally {
      server.close();
    }
  });

  it('heartbeats while a long tool runs and stops it when the activity is cancelled', async () => {
    const env = mockEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (details: unknown) => {
      beats.push(details);
      if (beats.length === 2) env.cancel();
    });
    const failure = await env
      .run(createToolActivities(policy).tool, request('shell.run', { command: 'sleep', args: ['5'] }))
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(CancelledFailure);
    expect(beats[0]).toMatchObject({ tool: 'shell.run', tick: 3 });
  });
});
