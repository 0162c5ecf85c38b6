/**
 * The one interface every LLM provider implements, and the scaffolding they share: the `llm` activity
 * heartbeats while a provider works, hands it Temporal's cancellation signal, turns what it throws into
 * the taxonomy (an `LlmError` keeps its facts; a network error is classified; anything else is a fatal
 * bug), checks the token usage it reports, and leaves through `throwAsFailure`. A provider only maps the
 * request to its API and the answer (or its failure) back: adding one is one file and one registry line
 * (docs/ARCHITECTURE.md#adding-a-provider).
 */
import { Context } from '@temporalio/activity';
import { normalizedError } from '../../core/errors';
import { usageProblem, type LlmRequest, type LlmResponse } from '../../core/llm';
import { llmLabel, type LlmSpec } from '../../core/llm-spec';
import { classifyNetworkError } from '../../core/errors/http';
import { ActivityError } from '../../core/errors/activity';
import { throwAsFailure, withinRetryPolicy } from '../failures';
import { withHeartbeats } from '../heartbeat';
import { rethrowIfCancelled } from './in-flight';

/** What a provider gets besides the request: the cancellation signal, and a way to show progress. */
export interface LlmCall {
  /** Aborted when Temporal cancels the activity (SYSTEM_HALT, heartbeat timeout, worker shutdown). */
  signal: AbortSignal;
  /** Merge facts into the heartbeat details (e.g. output tokens so far), shown in the Web UI. */
  progress(detail: Record<string, unknown>): void;
}

/**
 * An LLM provider for one kind of `--llm` spec.
 *
 * ```ts
 * const echo: LlmProvider<{ provider: 'echo' }> = {
 *   async generate(req) { return { text: 'hi', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 } }; },
 *   preflight: () => undefined,
 * };
 * ```
 */
export interface LlmProvider<S extends LlmSpec = LlmSpec> {
  /**
   * One answer to `req`. Throw `LlmError` for a failure you have classified (with `retryAfterMs` when
   * the server said when to come back); network errors and cancellation are handled by the caller.
   */
  generate(req: LlmRequest, spec: S, call: LlmCall): Promise<LlmResponse>;
  /**
   * What is visibly wrong with running `spec` on this worker (no key, a bad URL), or undefined. Reads
   * only settings; contacts nothing.
   */
  preflight(spec: S): string | undefined;
}

/** One provider per kind of spec: the compiler checks that none is missing. */
export type LlmProviders = { [P in LlmSpec['provider']]: LlmProvider<Extract<LlmSpec, { provider: P }>> };

/** The provider for `spec`, typed for it (the mapped type guarantees the pairing). */
export function providerFor<S extends LlmSpec>(providers: LlmProviders, spec: S): LlmProvider<S> {
  return providers[spec.provider] as unknown as LlmProvider<S>;
}

/**
 * Run one LLM call through `provider` with the shared scaffolding. Must run inside an activity.
 *
 * ```ts
 * const response = await callLlm(providers.openai, req, parseLlmSpec(req.llm) as OpenAiSpec);
 * ```
 * @throws ApplicationFailure (retryable or not, per the error's kind) or the activity's cancellation.
 */
export function callLlm<S extends LlmSpec>(provider: LlmProvider<S>, req: LlmRequest, spec: S): Promise<LlmResponse> {
  const ctx = Context.current();
  const source = `llm ${spec.provider}`;
  const detail: Record<string, unknown> = { llm: llmLabel(spec), callNumber: req.callNumber };
  const call: LlmCall = { signal: ctx.cancellationSignal, progress: (d) => Object.assign(detail, d) };
  return withinRetryPolicy(req.maxRetryDelayMs, async () => {
    let response: LlmResponse;
    try {
      response = await withHeartbeats(provider.generate(req, spec, call), detail);
    } catch (err) {
      rethrowIfCancelled();
      if (ActivityError.isActivityError(err)) return throwAsFailure(err.error, { retryAfterMs: err.retryAfterMs });
      const network = classifyNetworkError(err, source);
      if (network) return throwAsFailure(network);
      return throwAsFailure(
        normalizedError({
          code: 'E_INTERNAL',
          kind: 'fatal',
          source,
          message: err instanceof Error ? err.message : String(err),
        }),
      );
    }
    // The budget rung and the search attributes trust these counts: a bad one is the provider's output anomaly.
    const problem = usageProblem(response.usage);
    if (problem) {
      return throwAsFailure(
        normalizedError({
          code: 'E_SCHEMA',
          kind: 'execution',
          source,
          message: `the provider reported token usage that is not a count: ${problem}`,
        }),
      );
    }
    return response;
  });
}
