/**
 * The `--llm` spec (docs/ARCHITECTURE.md#configuration): `scripted:FILE`, `gemini:MODEL`, `openai:MODEL`
 * (the worker's own endpoint) or `openai:MODEL@BASE_URL`, `bedrock:MODEL_ID`, `local:PATH.gguf`. A user writes the string;
 * the edge parses it once into an `LlmSpec`, which the parsed config, the workflows and the LLM activity
 * carry as it is. `formatLlmSpec` gives the string back for people (status, details).
 */
import { z } from 'zod';
import { once } from './lazy';
import { ConfigError } from './errors/request';

export type LlmSpec =
  | { provider: 'scripted'; file: string }
  | { provider: 'gemini'; model: string }
  /** Without `baseUrl`: the worker's own endpoint (`OPENAI_BASE_URL`), the only one its key is sent to. */
  | { provider: 'openai'; model: string; baseUrl?: string }
  /** A Bedrock model or inference profile id; the region, endpoint and credentials are the worker's. */
  | { provider: 'bedrock'; model: string }
  | { provider: 'local'; modelPath: string };

const PROVIDERS: readonly string[] = [
  'scripted',
  'gemini',
  'openai',
  'bedrock',
  'local',
] satisfies LlmSpec['provider'][];

export const LLM_SPEC_HELP =
  'scripted:FILE, gemini:MODEL, openai:MODEL[@BASE_URL], bedrock:MODEL_ID or local:PATH.gguf';

/**
 * A model name as it goes into a provider's URL path (Gemini's `…/models/MODEL:generateContent`): no
 * `..` segment, query, fragment, escape or space, so a name cannot send the worker's credentials to
 * another path of the provider's host.
 */
const MODEL_NAME = /^(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9][A-Za-z0-9._@/-]{0,199}$/;

/**
 * A Bedrock model id (`amazon.nova-lite-v1:0`), inference profile id (`us.anthropic.claude-…`) or ARN,
 * as Bedrock's `modelId` allows (at most 2048 characters). The SDK escapes it as one segment of the
 * request path, so none of its characters can reach another path.
 */
const BEDROCK_MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,2047}$/;

/** A cross-region inference profile id: a geography prefix, then the id of the model it routes to. */
const BEDROCK_PROFILE = /^(us|us-gov|eu|apac|jp|au|ca|global)\.(.+)$/;

/**
 * The ARNs a role needs `bedrock:InvokeModel` on (what Converse asks) to call a Bedrock model: a model
 * id's foundation model in the region; an inference profile and the foundation model it routes to, in
 * any region it may route to; an ARN as it is.
 *
 * ```ts
 * bedrockInvokeArns('us.amazon.nova-lite-v1:0', { partition: 'aws', region: 'us-east-1', account: '123456789012' })
 * // ['arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-lite-v1:0', 'arn:aws:bedrock:*::foundation-model/amazon.nova-lite-v1:0']
 * ```
 */
export function bedrockInvokeArns(model: string, at: { partition: string; region: string; account: string }): string[] {
  if (model.startsWith('arn:')) return [model];
  const profile = BEDROCK_PROFILE.exec(model);
  if (profile)
    return [
      `arn:${at.partition}:bedrock:${at.region}:${at.account}:inference-profile/${model}`,
      `arn:${at.partition}:bedrock:*::foundation-model/${profile[2]}`,
    ];
  return [`arn:${at.partition}:bedrock:${at.region}::foundation-model/${model}`];
}

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
      if (!MODEL_NAME.test(rest))
        throw bad('a Gemini model name holds letters, digits, ".", "_", "-", "@" and "/" (no ".." segment)');
      return { provider, model: rest };
    case 'bedrock':
      if (!rest) throw bad('bedrock needs a model id, e.g. bedrock:amazon.nova-lite-v1:0');
      if (!BEDROCK_MODEL_ID.test(rest))
        throw bad(
          'a Bedrock model id holds letters, digits, ".", "_", "-", ":" and "/" (an id, an inference profile or an ARN)',
        );
      return { provider, model: rest };
    case 'openai': {
      const at = rest.lastIndexOf('@');
      if (at < 0 && rest) return { provider, model: rest };
      if (at <= 0 || at === rest.length - 1) throw bad('openai needs MODEL or MODEL@BASE_URL');
      const baseUrl = rest.slice(at + 1);
      if (!/^https?:\/\/[^/]+/.test(baseUrl))
        throw bad(`the base URL "${baseUrl}" must start with http:// or https://`);
      return { provider, model: rest.slice(0, at), baseUrl };
    }
    case 'local':
      if (!rest.endsWith('.gguf')) throw bad('local needs a path to a .gguf model');
      return { provider, modelPath: rest };
    default:
      throw bad(`unknown provider "${provider}"`);
  }
}

/**
 * The spec as a user writes it: `parseLlmSpec(formatLlmSpec(spec))` equals `spec`.
 *
 * ```ts
 * formatLlmSpec({ provider: 'openai', model: 'qwen', baseUrl: 'http://127.0.0.1:8080/v1' }) // 'openai:qwen@http://127.0.0.1:8080/v1'
 * ```
 */
export function formatLlmSpec(spec: LlmSpec): string {
  switch (spec.provider) {
    case 'scripted':
      return `scripted:${spec.file}`;
    case 'gemini':
      return `gemini:${spec.model}`;
    case 'bedrock':
      return `bedrock:${spec.model}`;
    case 'openai':
      return `openai:${spec.model}${spec.baseUrl !== undefined ? `@${spec.baseUrl}` : ''}`;
    case 'local':
      return `local:${spec.modelPath}`;
  }
}

/**
 * A spec as a config carries it after parsing: the parsed object, checked by parsing its string form
 * again (so an object a raw client sends passes exactly the rules the string does), or the string a
 * user wrote. Built on first use: a task workflow, which receives its config parsed, never builds it.
 */
export const llmSpecSchema = once(() =>
  z.union([z.string(), z.object({ provider: z.string() }).passthrough()]).transform((raw, ctx): LlmSpec => {
    try {
      if (typeof raw === 'string') return parseLlmSpec(raw);
      const spec = PROVIDERS.includes(raw.provider) ? parseLlmSpec(formatLlmSpec(raw as LlmSpec)) : undefined;
      if (!spec || !sameSpec(spec, raw))
        throw new ConfigError(`Invalid llm ${JSON.stringify(raw)}: give it as a string, ${LLM_SPEC_HELP}`);
      return spec;
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  }),
);

/** Whether an object holds exactly the spec's fields (no unknown, none missing). */
function sameSpec(spec: LlmSpec, raw: Record<string, unknown>): boolean {
  const keys = Object.keys(raw).filter((k) => raw[k] !== undefined);
  return keys.length === Object.keys(spec).length && keys.every((k) => (spec as Record<string, unknown>)[k] === raw[k]);
}

/** A short label for activity summaries: "scripted turns.json", "gemini gemini-2.5-flash". */
export function llmLabel(spec: LlmSpec): string {
  switch (spec.provider) {
    case 'scripted':
      return `scripted ${spec.file.split('/').pop()}`;
    case 'gemini':
    case 'openai':
    case 'bedrock':
      return `${spec.provider} ${spec.model}`;
    case 'local':
      return `local ${spec.modelPath.split('/').pop()}`;
  }
}
