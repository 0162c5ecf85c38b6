/**
 * The LLM activity: one call to the controller, through the provider its `--llm` spec names. The
 * registry below has one provider per kind of spec (the compiler checks it); the scaffolding every call
 * shares (heartbeats, cancellation, classification, usage checks, the failure boundary) is `callLlm`
 * in `provider.ts`.
 */
import { normalizedError } from '../../core/errors';
import { trace } from '@opentelemetry/api';
import { chatContentAttributes, llmMetricAttributes, METRIC } from '../../core/telemetry';
import { Context } from '@temporalio/activity';
import { secondsSince, thrownCode, type ActivityMeter } from '../metrics';
import type { LlmCallInput, LlmResponse, SummaryInput, SummaryResponse } from '../../core/llm';
import { SUMMARY_RECORD_CHARS, summaryMessage, summaryRequest } from '../../core/context-summary';
import type { LlmSpec } from '../../core/llm-spec';
import type { LlmRequest } from '../../core/llm';
import type { PricingTable } from '../../core/pricing';
import { llmSpecProblem, scriptDirs, type WorkerPolicy } from '../../core/worker-policy';
import { activityTenant } from '../tenant';
import { throwAsFailure } from '../failures';
import { createBedrockProvider, type BedrockProviderOptions } from './bedrock';
import { createGeminiProvider, type GeminiProviderOptions } from './gemini';
import { createLocalProvider, type LocalProviderOptions } from './local';
import { createOpenAiProvider, type OpenAiProviderOptions } from './openai';
import { callLlm, providerFor, type LlmProviders } from './provider';
import { createScriptedProvider } from './scripted';
import { withStore, type TranscriptStore } from '../transcript';

/** Provider settings for the LLM activity; every field optional (the worker's environment fills in). */
export interface LlmProviderOptions {
  gemini?: GeminiProviderOptions;
  openai?: OpenAiProviderOptions;
  bedrock?: BedrockProviderOptions;
  local?: LocalProviderOptions;
}

/**
 * Every provider, by the name its `--llm` spec starts with. Adding one: a file exporting a
 * `LlmProvider`, a variant in `LlmSpec` (core/llm-spec.ts), and a line here.
 *
 * ```ts
 * const providers = createLlmProviders({ openai: { apiKey: 'sk-test' } });
 * providers.openai.preflight({ provider: 'openai', model: 'gpt-4o-mini', baseUrl: 'https://api.openai.com/v1' });
 * ```
 */
export function createLlmProviders(deps: LlmProviderOptions = {}, policy?: LlmPolicy): LlmProviders {
  return {
    // A tenant's task reads scripts from its part of the roots (and llmDirs) only.
    scripted: createScriptedProvider(policy ? { dirs: () => scriptDirs(policy, activityTenant()) } : {}),
    gemini: createGeminiProvider(deps.gemini),
    openai: createOpenAiProvider(deps.openai),
    bedrock: createBedrockProvider(deps.bedrock),
    // Models from llmDirs only, never from under a root: tasks write there, and the runtime is native code.
    local: createLocalProvider({ ...deps.local, ...(policy ? { dirs: policy.llmDirs, notIn: policy.roots } : {}) }),
  };
}

/** The parts of the worker policy the LLM activity applies: which endpoints and files a spec may name. */
export type LlmPolicy = Pick<WorkerPolicy, 'roots' | 'llmAllow' | 'llmDirs'>;

/**
 * The problem with running `spec` on this worker, or undefined when nothing is visibly wrong: a
 * misconfigured provider (no Vertex project or key, no key for api.openai.com, no AWS region) is a clear error at the
 * edge instead of a paused agent later. Reads only the worker's options and environment.
 *
 * ```ts
 * const problem = llmSetupProblem({ provider: 'gemini', model: 'gemini-2.5-flash' });
 * if (problem) throw new ConfigError(problem);
 * ```
 */
export function llmSetupProblem(spec: LlmSpec, deps: LlmProviderOptions = {}): string | undefined {
  return providerFor(createLlmProviders(deps), spec).preflight(spec);
}

/** What the LLM activity records: the worker's metrics, whose models its price table bounds, and content on spans. */
export interface LlmTelemetry {
  meter?: ActivityMeter | undefined;
  /** The worker's price table (`STARRY_PRICING`): a model it prices is named in the metrics, any other `_OTHER`. */
  pricing?: PricingTable | undefined;
  captureContent?: boolean | undefined;
}

/**
 * Create the LLM activities. Credentials are the worker's: from `deps` (tests) or its environment. The
 * policy bounds what a spec may name (core/worker-policy.ts `llmSpecProblem`), checked at every call as
 * at submit: a worker whose policy is narrower than the one that accepted the task refuses it too.
 *
 * ```ts
 * const worker = await Worker.create({ activities: { ...createLlmActivities({ openai: { apiKey: 'sk-test' } }, transcriptStore(storeFromEnv()), policy) }, ... });
 * ```
 */
export function createLlmActivities(
  deps: LlmProviderOptions,
  transcripts: TranscriptStore,
  policy: LlmPolicy,
  telemetry: LlmTelemetry = {},
) {
  const worker: LlmWorker = { providers: createLlmProviders(deps, policy), transcripts, policy, telemetry };
  return {
    async llm(input: LlmCallInput): Promise<LlmResponse> {
      checkPolicy(policy, input.llm);
      // A whole context (no references: a direct call) resolves to itself, with no store access.
      const { request, answer } = await withStore(() => transcripts.resolve(input));
      const response = await generate(worker, request, input.llm);
      return withStore(() => answer(response));
    },

    /**
     * The `summarize` context strategy's call: the same model summarizes the turns a window leaves out
     * (and the summary before them); the summary and its record go to the transcript store.
     */
    summarize: (input: SummaryInput): Promise<SummaryResponse> => summarize(worker, input),
  };
}

/** What the LLM activities of one worker share. */
interface LlmWorker {
  providers: LlmProviders;
  transcripts: TranscriptStore;
  policy: LlmPolicy;
  telemetry: LlmTelemetry;
}

/** A spec the worker's policy refuses fails the call for good, saying how to get it allowed. */
function checkPolicy(policy: LlmPolicy, spec: LlmSpec): void {
  const refused = llmSpecProblem(spec, policy, activityTenant());
  if (!refused) return;
  throwAsFailure(
    normalizedError({
      code: 'EPERM',
      kind: 'fatal',
      source: `llm ${spec.provider}`,
      message: `Refused by the worker's policy: llm: ${refused}`,
      suggestion:
        "Submit the task with an endpoint or file the worker allows, or ask the worker's operator to widen STARRY_WORKER_POLICY (llmAllow, llmDirs).",
    }),
  );
}

/** One provider call, timed and counted in the metrics. */
async function generate({ providers, telemetry }: LlmWorker, request: LlmRequest, spec: LlmSpec): Promise<LlmResponse> {
  const { meter, pricing, captureContent = false } = telemetry;
  const started = performance.now();
  let response: LlmResponse;
  try {
    response = await callLlm(providerFor(providers, spec), request, spec);
  } catch (err) {
    const failed = thrownCode(err, Context.current().cancellationSignal.aborted);
    meter?.record(METRIC.operationDuration, secondsSince(started), llmMetricAttributes(spec, { pricing, failed }));
    throw err;
  }
  if (meter) {
    const attributes = llmMetricAttributes(spec, { pricing });
    meter.record(METRIC.operationDuration, secondsSince(started), attributes);
    meter.record(METRIC.tokenUsage, response.usage.inputTokens, { ...attributes, 'gen_ai.token.type': 'input' });
    meter.record(METRIC.tokenUsage, response.usage.outputTokens, { ...attributes, 'gen_ai.token.type': 'output' });
    // Part of the input, not in addition to it: named like the conventions' gen_ai.usage.cache_read.input_tokens.
    if (response.usage.cachedInputTokens !== undefined)
      meter.record(METRIC.tokenUsage, response.usage.cachedInputTokens, {
        ...attributes,
        'gen_ai.token.type': 'cache_read',
      });
  }
  // The attempt's span (Temporal's RunActivity, active here when the task traces).
  if (captureContent) trace.getActiveSpan()?.setAttributes(chatContentAttributes(request.messages, response));
  return response;
}

async function summarize(worker: LlmWorker, input: SummaryInput): Promise<SummaryResponse> {
  const { transcripts } = worker;
  const spec = input.llm;
  checkPolicy(worker.policy, spec);
  const [previous, turns] = await withStore(() =>
    Promise.all([
      input.previous ? transcripts.read([input.previous.message]) : Promise.resolve([]),
      transcripts.read(input.entries),
    ]),
  );
  const request: LlmRequest = {
    llm: spec,
    agentId: input.agentId,
    taskId: input.taskId,
    callNumber: input.callNumber,
    tick: input.tick,
    messages: summaryRequest(previous[0]?.text, turns),
    tools: [],
    maxOutputTokens: input.maxOutputTokens,
    ...(input.maxRetryDelayMs !== undefined ? { maxRetryDelayMs: input.maxRetryDelayMs } : {}),
  };
  const response = await generate(worker, request, spec);
  const text = response.text?.trim();
  if (!text)
    throwAsFailure(
      normalizedError({
        code: 'E_SCHEMA',
        kind: 'execution',
        source: `llm ${spec.provider}`,
        message: 'the model answered the summary request with no text',
      }),
    );
  const summary = await withStore(() =>
    transcripts.keepSummary(summaryMessage(text, input.covers), {
      covers: input.covers,
      ...(input.previous ? { replaces: input.previous.record } : {}),
      usage: response.usage,
    }),
  );
  return { summary, text: text.slice(0, SUMMARY_RECORD_CHARS), usage: response.usage };
}
