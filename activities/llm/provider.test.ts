import { CancelledFailure } from '@temporalio/common';
import type { LlmResponse } from '../../core/llm';
import { factsOf, failureOf, llmRequest, quietActivityEnv } from '../../test/helpers/llm-activity';
import { ActivityError, LlmError, ToolError } from '../../core/errors/activity';
import { createLlmProviders } from './index';
import { callLlm, type LlmProvider } from './provider';
import { parseLlmSpec } from '../../core/llm-spec';

type Echo = { provider: 'scripted'; file: string };
const spec: Echo = { provider: 'scripted', file: '/tmp/x.json' };
const ok = (usage: unknown = { inputTokens: 3, outputTokens: 2 }): LlmResponse => ({
  text: 'hi',
  toolCalls: [],
  usage: usage as LlmResponse['usage'],
});
const provider = (generate: LlmProvider<Echo>['generate']): LlmProvider<Echo> => ({
  generate,
  preflight: () => undefined,
});
const run = (p: LlmProvider<Echo>, env = quietActivityEnv(), over = {}) =>
  env.run(() => callLlm(p, llmRequest({ llm: parseLlmSpec('scripted:/tmp/x.json'), ...over }), spec));

describe('callLlm: the scaffolding every provider shares', () => {
  it('returns the provider’s answer and heartbeats with its progress while it works', async () => {
    const env = quietActivityEnv();
    const beats: unknown[] = [];
    env.on('heartbeat', (d) => beats.push(d));
    const res = await run(
      provider(async (_req, _spec, { progress }) => {
        progress({ outputTokens: 7 });
        await new Promise((r) => setTimeout(r, 450));
        return ok();
      }),
      env,
    );
    expect(res).toEqual(ok());
    expect(beats).toContainEqual(expect.objectContaining({ llm: 'scripted x.json', callNumber: 1, outputTokens: 7 }));
  });

  it('keeps the facts of an LlmError, its Retry-After capped by the retry policy', async () => {
    const f = await failureOf(
      run(
        provider(async () =>
          Promise.reject(
            LlmError.of(
              { code: 'E_RATE_LIMIT', message: 'HTTP 429', source: 'llm scripted' },
              { retryAfterMs: 60_000 },
            ),
          ),
        ),
        undefined,
        { maxRetryDelayMs: 5000 },
      ),
    );
    expect(f).toMatchObject({ type: 'E_RATE_LIMIT', nonRetryable: false, nextRetryDelay: 5000 });
    expect(factsOf(f)).toEqual({
      code: 'E_RATE_LIMIT',
      message: 'HTTP 429',
      source: 'llm scripted',
      kind: 'transient',
    });
  });

  it('classifies a network error the provider did not catch, and makes anything else a fatal bug', async () => {
    const reset = await failureOf(
      run(provider(async () => Promise.reject(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })))),
    );
    expect(reset).toMatchObject({ type: 'ECONNRESET', nonRetryable: false });
    const bug = await failureOf(run(provider(async () => Promise.reject(new TypeError('x is undefined')))));
    expect(bug).toMatchObject({ type: 'E_INTERNAL', nonRetryable: true });
    expect(factsOf(bug)).toMatchObject({ kind: 'fatal', source: 'llm scripted', message: 'x is undefined' });
  });

  it.each([
    [{ inputTokens: 10.5, outputTokens: 2 }, /inputTokens is 10\.5/],
    [{ inputTokens: -1, outputTokens: 2 }, /inputTokens is -1/],
    [{ inputTokens: 1 }, /outputTokens is missing/],
  ])('refuses reported usage %j as an output anomaly of the provider (E_SCHEMA)', async (usage, message) => {
    const f = await failureOf(run(provider(async () => ok(usage))));
    expect(f).toMatchObject({ type: 'E_SCHEMA', nonRetryable: true });
    expect(factsOf(f).message).toMatch(message);
  });

  it('hands the provider Temporal’s cancellation signal and surfaces a cancellation as the activity’s own', async () => {
    const env = quietActivityEnv();
    let seen: AbortSignal | undefined;
    const p = run(
      provider(
        (_req, _spec, { signal }) =>
          new Promise((_, reject) => {
            seen = signal;
            signal.addEventListener('abort', () =>
              reject(LlmError.of({ code: 'E_UNAVAILABLE', message: 'aborted', source: 'llm scripted' })),
            );
          }),
      ),
      env,
    );
    await new Promise((r) => setTimeout(r, 20));
    env.cancel();
    await expect(p).rejects.toBeInstanceOf(CancelledFailure);
    expect(seen?.aborted).toBe(true);
  });
});

describe('the provider registry', () => {
  it('has one provider for every kind of --llm spec, each with a preflight', () => {
    const providers = createLlmProviders({ gemini: { env: {} }, openai: { env: {} } });
    expect(Object.keys(providers).sort()).toEqual(['bedrock', 'gemini', 'local', 'openai', 'scripted']);
    expect(providers.gemini.preflight({ provider: 'gemini', model: 'm' })).toMatch(/GOOGLE_CLOUD_PROJECT/);
    expect(providers.scripted.preflight({ provider: 'scripted', file: 'x' })).toBeUndefined();
  });
});

describe('the activity error family', () => {
  it('gives tools and providers one base with a code and a cause', () => {
    const cause = new Error('root');
    const tool = ToolError.of({ code: 'EPERM', message: 'no', source: 'fs.read' }, { cause });
    const llm = LlmError.of({ code: 'E_AUTH', message: '401', source: 'llm openai' }, { retryAfterMs: 5 });
    for (const e of [tool, llm]) expect(ActivityError.isActivityError(e)).toBe(true);
    expect([tool.code, tool.cause, tool.name]).toEqual(['EPERM', cause, 'ToolError']);
    expect([llm.code, llm.retryAfterMs, llm.name, llm.error.kind]).toEqual(['E_AUTH', 5, 'LlmError', 'fatal']);
    expect(ToolError.is(llm)).toBe(false);
    expect(ActivityError.isActivityError(new Error('plain'))).toBe(false);
  });
});
