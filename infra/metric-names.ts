/**
 * The names CloudWatch metrics are published under, shared by the stack (alarms, dashboard, scaling
 * policies) and the code that publishes them (the backlog Lambda). No aws-cdk-lib import here: a Lambda
 * bundle that imports this file stays small.
 */

/** The CloudWatch namespace of every metric the stack makes (the worker-error metric filter's too). */
export const METRICS_NAMESPACE = 'OpenStarry';
/** A task queue's approximate backlog, workflow plus activity tasks (Count), from infra/backlog/handler.ts. */
export const BACKLOG_METRIC = 'TaskQueueBacklog';
/** Age of the oldest task in a task queue's backlog (Seconds), from infra/backlog/handler.ts. */
export const BACKLOG_AGE_METRIC = 'TaskQueueBacklogAge';
/** The dimension both backlog metrics carry: the task queue's name. */
export const TASK_QUEUE_DIMENSION = 'TaskQueue';
