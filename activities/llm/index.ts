/**
 * The LLM activity: one call to the controller. It heartbeats while it waits and passes Temporal's
 * cancellation on, so SYSTEM_HALT stops a call in flight. Failures leave through `throwAsFailure`.
 */
import { Context } from '@temporalio/activity';
import { normalizedError } from '../../core/errors';
import { usageProblem, type LlmRequest, type LlmResponse } from '../../core/llm';
import { parseLlmSpec } from '../../core/llm-spec';
import { throwAsFailure, withinRetryPolicy } from '../failures';
import { heartbeatingSleep } from '../heartbeat';
import { createGeminiProvider, type GeminiProviderOptions } from './gemini';
import { createLocalProvider } from './local';
import { createOpenAiProvider, type OpenAiProviderOptions } from './openai';
import { loadScript, stepFor } from './scripted';

/** Provider settings for the LLM activity; every field optional (the worker's environment fills in). */
export interface LlmProviderOptions {
  gemini?: GeminiProviderOptions;
  openai?: OpenAiProviderOptions;
}

async function scripted(file: string, req: LlmRequest): Promise<LlmResponse> {
  const { attempt } = Context.current().info;
  let script;
  try {
    script = await loadScript(file);
  } catch (err) {
    return throwAsFailure(normalizedError({ code: 'EINVAL', kind: 'execution', source: 'llm scripted', message: (err as Error).message }));
  }
  const step = stepFor(script, req, attempt);
  if (step.delayMs > 0) await heartbeatingSleep(step.delayMs, { callNumber: req.callNumber });
  if (step.kind === 'fail') return throwAsFailure(step.error, { retryAfterMs: step.retryAfterMs });
  return step.response;
}

/**
 * Create the LLM activities. Credentials are the worker's: from `deps` (tests) or its environment.
 *
 * ```ts
 * const worker = await Worker.create({ activities: { ...createLlmActivities({ openai: { apiKey: 'sk-test' } }) }, ... });
 * ```
 */
export function createLlmActivities(deps: LlmProviderOptions = {}) {
  const gemini = createGeminiProvider(deps.gemini);
  const openai = createOpenAiProvider(deps.openai);
  const local = createLocalProvider();
  return {
    async llm(req: LlmRequest): Promise<LlmResponse> {
      const res = await withinRetryPolicy(req.maxRetryDelayMs, () => generate(req));
      const problem = usageProblem(res.usage);
      if (problem) {
        return throwAsFailure(
          normalizedError({ code: 'E_SCHEMA', kind: 'execution', source: `llm ${parseLlmSpec(req.llm).provider}`, message: `the provider reported token usage that is not a count: ${problem}` }),
        );
      }
      return res;
    },
  };

  async function generate(req: LlmRequest): Promise<LlmResponse> {
    const spec = parseLlmSpec(req.llm);
    switch (spec.provider) {
      case 'scripted':
        return scripted(spec.file, req);
      case 'gemini':
        return gemini.generate(req, spec.model);
      case 'openai':
        return openai.generate(req, spec);
      case 'local':
        return local.generate(req, spec);
      default: {
        // Unreachable while every provider has a case: kept for a provider added to LlmSpec without one.
        const provider = (spec as { provider: string }).provider;
        return throwAsFailure(
          normalizedError({
            code: 'E_INTERNAL',
            kind: 'fatal',
            source: `llm ${provider}`,
            message: `the ${provider} provider is not available in this build of the worker`,
          }),
        );
      }
    }
  }
}
