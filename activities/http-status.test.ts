/**
 * One HTTP-status table (core/errors/http.ts) for every HTTP client: the LLM providers and `http.get`,
 * each against a real local server answering every failure status in turn.
 */
import { kindOf } from '../core/errors';
import { httpStatusCode, type RequestedBy } from '../core/errors/http';
import { geminiError, openAiError, startFakeServer, type FakeServer } from '../test/helpers/fake-llm-server';
import { factsOf, failureOf, llmRequest, quietActivityEnv } from '../test/helpers/llm-activity';
import { createGeminiProvider } from './llm/gemini';
import { createOpenAiProvider } from './llm/openai';
import { callLlm } from './llm/provider';
import { runTool } from './tools';
import { toolsConfig } from './tools/test-support';

// 407 never reaches a client as a status: fetch makes it a network error (the Fetch standard).
const FAILURE_STATUSES = Array.from({ length: 200 }, (_, i) => 400 + i).filter((s) => s !== 407);

describe('one HTTP-status table for the LLM providers and http.get', () => {
  let server: FakeServer;
  let status = 0;
  beforeAll(async () => {
    server = await startFakeServer((req) => {
      if (req.path.endsWith('/chat/completions')) return openAiError(status, 'refused');
      if (req.path.endsWith(':generateContent')) return geminiError(status, 'refused');
      return { status, text: 'refused' };
    });
  });
  afterAll(() => server.close());

  const table = (s: number, requestedBy: RequestedBy) => {
    const code = httpStatusCode(s, requestedBy);
    return { code, kind: kindOf(code) };
  };
  const classOf = (e: { code: string; kind: string } | undefined) => ({ code: e?.code, kind: e?.kind });

  const viaOpenAi = async () => {
    const provider = createOpenAiProvider({ baseUrl: `${server.url}/v1`, apiKey: 'sk-test' });
    const req = llmRequest();
    return classOf(
      factsOf(
        await failureOf(
          quietActivityEnv().run(() =>
            callLlm(provider, req, { provider: 'openai', model: 'fake', baseUrl: `${server.url}/v1` }),
          ),
        ),
      ),
    );
  };
  const viaGemini = async () => {
    const provider = createGeminiProvider({
      baseUrl: server.url,
      apiKey: 'test-key',
      project: 'proj',
      location: 'us-central1',
      env: {},
    });
    const req = llmRequest({ llm: { provider: 'gemini', model: 'gemini-2.5-flash' } });
    return classOf(
      factsOf(
        await failureOf(
          quietActivityEnv().run(() => callLlm(provider, req, { provider: 'gemini', model: 'gemini-2.5-flash' })),
        ),
      ),
    );
  };
  const viaHttpGet = async () => {
    const result = await runTool({
      name: 'http.get',
      args: { url: `${server.url}/page` },
      tick: 1,
      workspace: ['/'],
      tools: toolsConfig({ httpAllow: [new URL(server.url).host] }),
      toolTimeoutMs: 10_000,
    });
    return classOf(result.error);
  };

  it('gives every failure status the table’s code and kind: the providers as the worker’s request, http.get as the model’s', async () => {
    for (const s of FAILURE_STATUSES) {
      status = s;
      expect({ status: s, llm: await viaOpenAi() }).toEqual({ status: s, llm: table(s, 'worker') });
      expect({ status: s, llm: await viaGemini() }).toEqual({ status: s, llm: table(s, 'worker') });
      expect({ status: s, tool: await viaHttpGet() }).toEqual({ status: s, tool: table(s, 'model') });
    }
  });

  it('classifies alike on both paths except a refused credential: the worker’s key stops the agent, a URL the model chose is pain', async () => {
    const differ: number[] = [];
    for (const s of FAILURE_STATUSES) {
      status = s;
      if (JSON.stringify(await viaOpenAi()) !== JSON.stringify(await viaHttpGet())) differ.push(s);
    }
    expect(differ).toEqual([401, 403]);
    status = 409;
    expect([await viaOpenAi(), await viaHttpGet()]).toEqual([
      { code: 'E_UNAVAILABLE', kind: 'transient' },
      { code: 'E_UNAVAILABLE', kind: 'transient' },
    ]);
    status = 401;
    expect([await viaOpenAi(), await viaHttpGet()]).toEqual([
      { code: 'E_AUTH', kind: 'fatal' },
      { code: 'EACCES', kind: 'execution' },
    ]);
  });
});
