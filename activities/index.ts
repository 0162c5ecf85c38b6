/**
 * Every activity the worker registers. Workflows import this file's *type* only.
 */
import { createAlertActivities, type AlertSinks } from './alert';
import { createLlmActivities, type LlmProviderOptions } from './llm';
import type { WorkerPolicy } from '../core/worker-policy';
import { createToolActivities } from './tools';

export interface ActivityDeps {
  alerts?: AlertSinks;
  /** LLM provider settings (credentials, endpoints); absent fields come from the worker's environment. */
  llm?: LlmProviderOptions;
  /** The operator's outer limits for every tool call (worker/env.ts reads them). */
  policy: WorkerPolicy;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createLlmActivities(deps.llm),
    ...createToolActivities(deps.policy),
    ...createAlertActivities(deps.alerts),
  };
}
