/**
 * A check of the worker's LLM settings before any task starts: a misconfigured provider (no Vertex
 * project or key, a base URL that is not http(s), no key for api.openai.com) is a clear error at the
 * edge instead of a paused agent later. It reads only the worker's options and environment and contacts
 * nothing, so it cannot tell a wrong key from a right one (a 401 does that, and pauses the agent).
 */
import type { LlmSpec } from '../../core/llm-spec';
import { resolveGeminiSetup, type GeminiProviderOptions } from './gemini';
import type { OpenAiProviderOptions } from './openai';

/**
 * The problem with running `spec` on this worker, or undefined when nothing is visibly wrong.
 *
 * ```ts
 * const problem = llmSetupProblem(parseLlmSpec('gemini:gemini-2.5-flash'));
 * if (problem) throw new ConfigError(problem);
 * ```
 */
export function llmSetupProblem(spec: LlmSpec, options: { gemini?: GeminiProviderOptions; openai?: OpenAiProviderOptions } = {}): string | undefined {
  switch (spec.provider) {
    case 'gemini': {
      const setup = resolveGeminiSetup(options.gemini);
      return setup.ok ? undefined : `--llm gemini:${spec.model}: ${setup.message}`;
    }
    case 'openai': {
      let url: URL;
      try {
        url = new URL(spec.baseUrl);
      } catch {
        return `--llm openai:${spec.model}@${spec.baseUrl}: the base URL is not a URL (e.g. https://api.openai.com/v1)`;
      }
      const env = options.openai?.env ?? process.env;
      const hasKey = !!(options.openai?.apiKey || env.STARRY_OPENAI_API_KEY?.trim() || env.OPENAI_API_KEY?.trim());
      if (url.hostname === 'api.openai.com' && !hasKey) return `--llm openai:${spec.model}@${spec.baseUrl}: api.openai.com needs an API key: set OPENAI_API_KEY (or STARRY_OPENAI_API_KEY) where the worker runs`;
      return undefined;
    }
    default:
      return undefined;
  }
}
