/**
 * Every activity the worker registers. Workflows import this file's *type* only.
 */
import { createAlertActivities, type AlertSinks } from './alert';
import { createLlmActivities, type LlmProviderOptions } from './llm';
import { createToolActivities } from './tools';

export interface ActivityDeps {
  alerts?: AlertSinks;
  /** LLM provider settings (credentials, endpoints); absent fields come from the worker's environment. */
  llm?: LlmProviderOptions;
}

export function createActivities(deps: ActivityDeps = {}) {
  return {
    ...createLlmActivities(deps.llm),
    ...createToolActivities(),
    ...createAlertActivities(deps.alerts),
  };
}
