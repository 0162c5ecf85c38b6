/**
 * The `--llm` spec (docs/ARCHITECTURE.md#configuration): `scripted:FILE`, `gemini:MODEL`, `openai:MODEL`
 * (the worker's own endpoint) or `openai:MODEL@BASE_URL`, `local:PATH.gguf`. Parsed once at the edge so
 * a typo is a clear error before any task starts.
 */
import { ConfigError } from './errors';

export type LlmSpec =
  | { provider: 'scripted'; file: string }
  | { provider: 'gemini'; model: string }
  /** Without `baseUrl`: the worker's own endpoint (`OPENAI_BASE_URL`), the only one its key is sent to. */
  | { provider: 'openai'; model: string; baseUrl?: string }
  | { provider: 'local'; modelPath: string };

export const LLM_SPEC_HELP = 'scripted:FILE, gemini:MODEL, openai:MODEL[@BASE_URL] or local:PATH.gguf';

/**
 * A model name as it goes into a provider's URL path (Gemini's `…/models/MODEL:generateContent`): no
 * `..` segment, query, fragment, escape or space, so a name cannot send the worker's credentials to
 * another path of the provider's host.
 */
const MODEL_NAME = /^(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9][A-Za-z0-9._@/-]{0,199}$/;

/**
 * Parse an `--llm` spec.
 *
 * ```ts
 * parseLlmSpec('openai:gpt-4o-mini@http://127.0.0.1:8000/v1') // { provider: 'openai', model: 'gpt-4o-mini', baseUrl: '…' }
 * ```
 * @throws ConfigError naming the spec and the accepted forms.
 */
export function parseLlmSpec(spec: string): LlmSpec {
  const colon = spec.indexOf(':');
  const provider = colon < 0 ? spec : spec.slice(0, colon);
  const rest = colon < 0 ? '' : spec.slice(colon + 1);
  const bad = (why: string) => new ConfigError(`Invalid --llm "${spec}": ${why}. Use ${LLM_SPEC_HELP}.`);
  switch (provider) {
    case 'scripted':
      if (!rest) throw bad('scripted needs a file');
      return { provider, file: rest };
    case 'gemini':
      if (!rest) throw bad('gemini needs a model name, e.g. gemini:gemini-2.5-flash');
      if (!MODEL_NAME.test(rest)) throw bad('a Gemini model name holds letters, digits, ".", "_", "-", "@" and "/" (no ".." segment)');
      return { provider, model: rest };
    case 'openai': {
      const at = rest.lastIndexOf('@');
      if (at < 0 && rest) return { provider, model: rest };
      if (at <= 0 || at === rest.length - 1) throw bad('openai needs MODEL or MODEL@BASE_URL');
      const baseUrl = rest.slice(at + 1);
      if (!/^https?:\/\/[^/]+/.test(baseUrl)) throw bad(`the base URL "${baseUrl}" must start with http:// or https://`);
      return { provider, model: rest.slice(0, at), baseUrl };
    }
    case 'local':
      if (!rest.endsWith('.gguf')) throw bad('local needs a path to a .gguf model');
      return { provider, modelPath: rest };
    default:
      throw bad(`unknown provider "${provider}"`);
  }
}

/** A short label for activity summaries: "scripted turns.json", "gemini gemini-2.5-flash". */
export function llmLabel(spec: LlmSpec): string {
  switch (spec.provider) {
    case 'scripted':
      return `scripted ${spec.file.split('/').pop()}`;
    case 'gemini':
    case 'openai':
      return `${spec.provider} ${spec.model}`;
    case 'local':
      return `local ${spec.modelPath.split('/').pop()}`;
  }
}
