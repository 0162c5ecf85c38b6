/**
 * How a worker service scales (docs/DEPLOY.md#scaling): on CPU always, and the current version's services
 * on their task queue's backlog per running task too, which the backlog metric (infra/backlog-metric.ts)
 * publishes every minute.
 *
 * ```ts
 * scaleWorkers(service, cluster, { min: 1, max: 4, queue: TASK_QUEUE }, true);
 * ```
 */
import { Duration } from 'aws-cdk-lib';
import { AdjustmentType } from 'aws-cdk-lib/aws-applicationautoscaling';
import { MathExpression, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import type { BaseService, ICluster } from 'aws-cdk-lib/aws-ecs';
import { BACKLOG_METRIC, METRICS_NAMESPACE, TASK_QUEUE_DIMENSION } from './metric-names';

/** A kind of worker's task count: between `min` and `max`, on `queue`'s backlog. */
export interface ScaleRange {
  min: number;
  max: number;
  queue: string;
}

/**
 * Scale on backlog: backlog per task of the service's queue at or above these adds tasks, below 1
 * removes one. CPU target tracking beside it is the floor: Application Auto Scaling keeps the larger
 * of the two policies' capacities.
 */
export const BACKLOG_STEPS = [
  { upper: 1, change: -1 },
  { lower: 5, change: +1 },
  { lower: 20, change: +3 },
];

/**
 * A service's task count: between `min` and `max`, on CPU (60%) always, and for the current version on
 * its queue's backlog per running task (BACKLOG_STEPS). A draining version's services scale on CPU
 * only: the queue's backlog is the new version's work.
 */
export function scaleWorkers(service: BaseService, cluster: ICluster, range: ScaleRange, onBacklog: boolean): void {
  const scaling = service.autoScaleTaskCount({ minCapacity: range.min, maxCapacity: range.max });
  scaling.scaleOnCpuUtilization('Cpu', {
    targetUtilizationPercent: 60,
    scaleInCooldown: Duration.minutes(5),
    scaleOutCooldown: Duration.minutes(1),
  });
  if (!onBacklog) return;
  const minute = Duration.minutes(1);
  scaling.scaleOnMetric('Backlog', {
    metric: new MathExpression({
      label: `${range.queue} backlog per task`,
      // No data yet counts as none; no running task as one (the backlog itself).
      expression: 'FILL(backlog, 0) / IF(FILL(tasks, 0) > 0, FILL(tasks, 0), 1)',
      usingMetrics: {
        backlog: new Metric({
          namespace: METRICS_NAMESPACE,
          metricName: BACKLOG_METRIC,
          dimensionsMap: { [TASK_QUEUE_DIMENSION]: range.queue },
          statistic: 'Maximum',
          period: minute,
        }),
        tasks: new Metric({
          namespace: 'ECS/ContainerInsights',
          metricName: 'RunningTaskCount',
          dimensionsMap: { ClusterName: cluster.clusterName, ServiceName: service.serviceName },
          statistic: 'Average',
          period: minute,
        }),
      },
      period: minute,
    }),
    scalingSteps: BACKLOG_STEPS,
    adjustmentType: AdjustmentType.CHANGE_IN_CAPACITY,
    cooldown: minute,
    evaluationPeriods: 2,
  });
}
