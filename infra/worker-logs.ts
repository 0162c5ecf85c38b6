/**
 * The workers' log group, shared by every version and kind (a stream prefix each), and the alarm on their
 * errors: the SDK's and ours are "[worker ERROR]" / "worker failed" lines, counted by a metric filter; 5 or
 * more in 5 minutes page the alert topic.
 *
 * ```ts
 * const logs = new WorkerLogs(stack, 'WorkerLogsPart', { retention, alertTopic });
 * task.addContainer('worker', { logging: LogDrivers.awsLogs({ streamPrefix: 'worker', logGroup: logs.logGroup }), … });
 * ```
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, type IMetric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { FilterPattern, LogGroup, MetricFilter, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { METRICS_NAMESPACE } from './metric-names';
import { StackPart } from './stack-part';

export interface WorkerLogsProps {
  retention: RetentionDays;
  /** Where the worker-error alarm goes. */
  alertTopic: ITopic;
}

/** The log group, the worker-error metric and its alarm. */
export class WorkerLogs extends StackPart {
  readonly logGroup: LogGroup;
  /** Worker error lines, summed over 5 minutes (the alarm's metric; the dashboard shows it too). */
  readonly errors: IMetric;

  constructor(scope: Construct, id: string, props: WorkerLogsProps) {
    super(scope, id);
    this.logGroup = new LogGroup(this.stack, 'WorkerLogs', {
      retention: props.retention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const filter = new MetricFilter(this.stack, 'WorkerErrors', {
      logGroup: this.logGroup,
      filterPattern: FilterPattern.anyTerm('ERROR', 'worker failed'),
      metricNamespace: METRICS_NAMESPACE,
      metricName: 'WorkerErrors',
      metricValue: '1',
      defaultValue: 0,
    });
    this.errors = filter.metric({ period: Duration.minutes(5), statistic: 'Sum' });
    new Alarm(this.stack, 'WorkerErrorAlarm', {
      metric: this.errors,
      threshold: 5,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: 'OpenStarry workers logged 5 or more errors in 5 minutes',
    }).addAlarmAction(new SnsAction(props.alertTopic));
  }
}
