/**
 * Every activity the worker registers. Workflows import this file's *type* only.
 */
import { createAlertActivities, type AlertSinks } from './alert';
import { createLlmActivities } from './llm';
import { createToolActivities } from './tools';

export interface ActivityDeps {
  alerts?: AlertSinks;
}

export function createActivities(deps: ActivityDeps = {}) {
  return {
    ...createLlmActivities(),
    ...createToolActivities(),
    ...createAlertActivities(deps.alerts),
  };
}
