/**
 * The Temporal task queues the stack's workers poll and the backlog metric watches.
 *
 * ```ts
 * environment: { STARRY_TOOL_TASK_QUEUE: TOOL_TASK_QUEUE } // 'openstarry-tools'
 * ```
 */

/** The task queue of the workflows and LLM calls: the worker's default (STARRY_TASK_QUEUE unset). */
export const TASK_QUEUE = 'openstarry';
/** The tool activities' task queue, which the tool workers poll (STARRY_TOOL_TASK_QUEUE on every worker). */
export const TOOL_TASK_QUEUE = `${TASK_QUEUE}-tools`;
