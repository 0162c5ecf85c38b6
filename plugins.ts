/**
 * `openstarry-temporal/plugins`: what a worker's plugin module imports (docs/LIBRARY.md#plugins). A plugin
 * module is bundled into the worker's workflow code and runs in Temporal's deterministic sandbox, so this
 * entry holds only pure code from core/: no client, worker, activity or Node module is reachable from it
 * (workers/module-graph.test.ts checks that).
 *
 * ```ts
 * import { defineGuide, type WorkerPlugin } from 'openstarry-temporal/plugins';
 * ```
 */

// ---- guides: defineGuide, the types a guide handles, and the shipped ones to build on --------------------
export {
  defineGuide,
  GUIDE_ID_PATTERN,
  type Guide,
  type GuideSpec,
  type PainContext,
  type SafetyAlert,
} from './core/guides';
export { debuggingGuide, learningGuide, neutralGuide, painGuide, safetyGuide } from './core/guides';
// The shared system prompt (goal, roots, tools, limits, how to finish) a guide frames in its own voice.
export { basePrompt, FINISH_INSTRUCTION, type PromptFraming } from './core/guides/base-prompt';
// The facts of a failure, stated as the shipped guides state them.
export {
  codeAndMessage,
  countOf,
  describeFailure,
  lines,
  REPEAT_ALERT_SENTENCE,
  suggestionLine,
} from './core/guides/failure-facts';
export { calculateSeverity, type PainSeverity } from './core/guides/pain';
export type { AgentConfig } from './core/config';
export type { ErrorCode, NormalizedError } from './core/errors';

// ---- the plugin module's shape ---------------------------------------------------------------------------
export type { WorkerPlugin } from './core/plugins';

// ---- context strategies: the type a strategy implements, the built-ins, and the helpers to fit the limits --
export {
  prefixStrategy,
  summarizeStrategy,
  windowStrategy,
  type ContextPlan,
  type ContextStrategy,
  type ContextView,
} from './core/context-strategy';
export { entriesTokens, entryBytes, windowStart, type WindowLimits } from './core/context';
