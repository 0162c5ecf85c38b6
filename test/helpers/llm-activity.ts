/**
 * Running an LLM provider as an activity would run, without a server: Temporal's own
 * MockActivityEnvironment gives it a real activity Context (heartbeats, cancellation signal).
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { NormalizedError } from '../../core/errors';
import type { LlmRequest } from '../../core/llm';
import { toolSpecs } from '../../core/tools';

const noop = () => undefined;

/** An activity environment that does not log: failing is what most provider tests expect. */
export function quietActivityEnv(): MockActivityEnvironment {
  return new MockActivityEnvironment(undefined, {
    logger: { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop },
  });
}

/** An LLM request with the real tool registry. */
export function llmRequest(over: Partial<LlmRequest> = {}): LlmRequest {
  return {
    llm: { provider: 'openai', model: 'fake', baseUrl: 'http://127.0.0.1:1/v1' },
    agentId: 'a1',
    taskId: 'task-1',
    callNumber: 1,
    tick: 1,
    messages: [
      { role: 'system', text: 'You are careful.' },
      { role: 'user', text: 'Read notes.md' },
    ],
    tools: toolSpecs(),
    maxOutputTokens: 512,
    ...over,
  };
}

/** The ApplicationFailure `p` rejects with (the test fails when it resolves or throws anything else). */
export async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => new Error('expected a failure, but the call succeeded'),
    (e: unknown) => e,
  );
  if (!(err instanceof ApplicationFailure)) throw err;
  return err;
}

/** The NormalizedError an activity failure carries. */
export function factsOf(f: ApplicationFailure): NormalizedError {
  return f.details?.[0] as NormalizedError;
}
