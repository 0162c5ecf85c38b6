/**
 * Traces and metrics of the workers on AWS (docs/DEPLOY.md#observability-on-aws): an ADOT collector beside
 * each worker takes the worker's OTLP on loopback and sends traces to the X-Ray OTLP endpoint (SigV4) and a
 * chosen set of metrics to CloudWatch as EMF; a dashboard and two alarms read those metrics.
 *
 * ```ts
 * const o11y = new Observability(stack, 'Observability', { alertTopic, workerErrors, retention });
 * o11y.grantTelemetry(taskRole);
 * const worker = task.addContainer('worker', { environment: { ...o11y.workerEnvironment(buildId) }, … });
 * o11y.addCollector(task, worker);
 * ```
 */
import { Aws, CfnOutput, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  Metric,
  SearchExpression,
  TextWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import {
  type ContainerDefinition,
  ContainerDependencyCondition,
  ContainerImage,
  type TaskDefinition,
  LogDrivers,
} from 'aws-cdk-lib/aws-ecs';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import type { WorkerEnvName } from '../workers/env';
import { METRICS_NAMESPACE } from './metric-names';

export { METRICS_NAMESPACE };

/** The AWS Distro for OpenTelemetry collector, pinned (v0.49.0: collector-contrib v0.156.0). */
export const COLLECTOR_IMAGE = 'public.ecr.aws/aws-observability/aws-otel-collector:v0.49.0';
/** Where the worker sends OTLP/HTTP: the collector in the same task (one network namespace on Fargate). */
export const COLLECTOR_OTLP_HTTP = 'http://127.0.0.1:4318';

/**
 * The worker's metrics that become CloudWatch metrics, each with the dimension sets it is kept under: one
 * CloudWatch metric per dimension set and value combination (billed per metric), so only what the dashboard
 * and the alarms read. `[]` is the total over all values. Everything else (temporal_* included) is dropped
 * in the collector, before it costs log ingestion.
 */
export const CLOUDWATCH_METRICS: ReadonlyArray<{ name: string; dimensions: string[][]; unit: 'Count' | 'Seconds' }> = [
  { name: 'starry.ticks', dimensions: [[]], unit: 'Count' },
  { name: 'starry.halts', dimensions: [[]], unit: 'Count' },
  { name: 'starry.tasks', dimensions: [['starry.task.outcome']], unit: 'Count' },
  { name: 'starry.pain', dimensions: [['starry.pain.code'], ['starry.pain.kind']], unit: 'Count' },
  { name: 'starry.breaker.trips', dimensions: [['starry.breaker.rung']], unit: 'Count' },
  { name: 'starry.lockouts', dimensions: [['starry.lockout.reason'], []], unit: 'Count' },
  { name: 'gen_ai.client.token.usage', dimensions: [['gen_ai.request.model', 'gen_ai.token.type']], unit: 'Count' },
  { name: 'gen_ai.client.operation.duration', dimensions: [['gen_ai.request.model']], unit: 'Seconds' },
  { name: 'starry.tool.duration', dimensions: [['gen_ai.tool.name']], unit: 'Seconds' },
];

/** What the collector needs to know about its deployment. */
export interface CollectorConfigOptions {
  region: string;
  /** The CloudWatch Logs group EMF records go to (it exists: the collector never creates one). */
  emfLogGroupName: string;
  namespace?: string;
}

/**
 * The ADOT collector's configuration (given as `AOT_CONFIG_CONTENT`; JSON is YAML): OTLP in on loopback only;
 * traces batched to the X-Ray OTLP endpoint signed with the task role; metrics reduced to
 * `CLOUDWATCH_METRICS`, made deltas (CloudWatch sums what it receives; the worker's counters and
 * histograms are cumulative), and written as EMF with exactly the declared dimension sets.
 *
 * ```ts
 * collectorConfig({ region: 'eu-west-1', emfLogGroupName: '/openstarry/metrics' }).exporters.awsemf.namespace; // 'OpenStarry'
 * ```
 */
export function collectorConfig({ region, emfLogGroupName, namespace = METRICS_NAMESPACE }: CollectorConfigOptions) {
  const names = CLOUDWATCH_METRICS.map((m) => m.name);
  return {
    extensions: {
      // The image's /healthcheck probes 127.0.0.1:13133.
      health_check: { endpoint: '127.0.0.1:13133' },
      sigv4auth: { region, service: 'xray' },
    },
    receivers: {
      otlp: { protocols: { http: { endpoint: '127.0.0.1:4318' }, grpc: { endpoint: '127.0.0.1:4317' } } },
    },
    processors: {
      // A collector that falls behind drops data rather than growing past its container's memory.
      memory_limiter: { check_interval: '1s', limit_mib: 200, spike_limit_mib: 50 },
      // The task's cluster, family, id and revision on every span and on the EMF records (not as dimensions).
      resource_detection: { detectors: ['ecs'], timeout: '2s', override: false },
      'filter/cloudwatch': {
        error_mode: 'ignore',
        metrics: { metric: [`not (${names.map((n) => `name == "${n}"`).join(' or ')})`] },
      },
      batch: {},
    },
    exporters: {
      'otlp_http/xray': {
        traces_endpoint: `https://xray.${region}.amazonaws.com/v1/traces`,
        auth: { authenticator: 'sigv4auth' },
        compression: 'gzip',
      },
      awsemf: {
        region,
        namespace,
        log_group_name: emfLogGroupName,
        log_stream_name: '{TaskId}',
        dimension_rollup_option: 'NoDimensionRollup',
        metric_declarations: CLOUDWATCH_METRICS.map((m) => ({
          dimensions: m.dimensions,
          metric_name_selectors: [`^${m.name.replace(/\./g, '\\.')}$`],
        })),
        // CloudWatch units (the SDK's UCUM units, `s` or `{token}`, are not).
        metric_descriptors: CLOUDWATCH_METRICS.map((m) => ({ metric_name: m.name, unit: m.unit, overwrite: true })),
      },
    },
    service: {
      extensions: ['health_check', 'sigv4auth'],
      pipelines: {
        traces: {
          receivers: ['otlp'],
          processors: ['memory_limiter', 'resource_detection', 'batch'],
          exporters: ['otlp_http/xray'],
        },
        metrics: {
          receivers: ['otlp'],
          processors: ['memory_limiter', 'resource_detection', 'filter/cloudwatch', 'batch'],
          exporters: ['awsemf'],
        },
      },
      // Its own metrics would open a listener; its log says what failed.
      telemetry: { metrics: { level: 'none' } },
    },
  };
}

export interface ObservabilityProps {
  /** Where the alarms go (the stack's alert topic). */
  alertTopic: ITopic;
  /** The worker-error metric the dashboard shows beside the worker's own. */
  workerErrors: IMetric;
  retention: RetentionDays;
  /** The collector image; default `COLLECTOR_IMAGE` (a copy in your own registry works the same). */
  collectorImage?: string;
}

/** The collector's log group, the EMF group, the IAM for both exporters, the dashboard and the alarms. */
export class Observability extends Construct {
  readonly dashboard: Dashboard;
  readonly emfLogs: LogGroup;
  private readonly collectorLogs: LogGroup;
  private readonly image: string;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.image = props.collectorImage ?? COLLECTOR_IMAGE;
    this.collectorLogs = new LogGroup(this, 'CollectorLogs', {
      retention: props.retention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // EMF records: CloudWatch extracts the metrics on ingestion; the records themselves are rarely read.
    this.emfLogs = new LogGroup(this, 'MetricsLogs', {
      retention: props.retention,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.dashboard = this.makeDashboard(stack.stackName, props.workerErrors);
    this.makeAlarms(props.alertTopic);
    new CfnOutput(stack, 'DashboardName', { value: this.dashboard.dashboardName });
    new CfnOutput(stack, 'DashboardUrl', {
      value: `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards/dashboard/${this.dashboard.dashboardName}`,
    });
  }

  /**
   * Let a worker task role (the workflow workers', the tool workers') send what its collector exports:
   * spans to X-Ray (no resource-level permissions exist for these actions) and EMF records to its own
   * group (the group exists: no CreateLogGroup).
   */
  grantTelemetry(role: IRole): void {
    role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['xray:PutSpans', 'xray:PutSpansForIndexing'], resources: ['*'] }),
    );
    this.emfLogs.grantWrite(role);
    NagSuppressions.addResourceSuppressions(
      role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'xray:PutSpans and xray:PutSpansForIndexing (the X-Ray OTLP endpoint) have no resource-level permissions: they need Resource *.',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
  }

  /** The worker's OTEL_* variables: export to the collector beside it, as this deployment and version. */
  workerEnvironment(buildId: string): Partial<Record<WorkerEnvName, string>> {
    return {
      OTEL_EXPORTER_OTLP_ENDPOINT: COLLECTOR_OTLP_HTTP,
      OTEL_SERVICE_NAME: 'openstarry-worker',
      // What CloudWatch sums as it comes (each push the last minute's counts, so a restarted collector
      // counts nothing twice) and the histograms it computes percentiles from.
      OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'delta',
      OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'base2_exponential_bucket_histogram',
      OTEL_RESOURCE_ATTRIBUTES: `deployment.environment.name=${Stack.of(this).stackName},service.version=${buildId}`,
    };
  }

  /**
   * The collector container of a worker task. Not essential: a collector that stops never stops the
   * worker (whose exports then fail, logged once, without slowing a tick); ECS restarts it.
   */
  addCollector(task: TaskDefinition, worker: ContainerDefinition): ContainerDefinition {
    const config = collectorConfig({ region: Aws.REGION, emfLogGroupName: this.emfLogs.logGroupName });
    const collector = task.addContainer('otel-collector', {
      image: ContainerImage.fromRegistry(this.image),
      essential: false,
      cpu: 256,
      // The memory_limiter above keeps it under this.
      memoryLimitMiB: 256,
      environment: { AOT_CONFIG_CONTENT: Stack.of(this).toJsonString(config) },
      logging: LogDrivers.awsLogs({ streamPrefix: 'collector', logGroup: this.collectorLogs }),
      healthCheck: {
        // The image has no shell (FROM scratch): exec form, not CMD-SHELL.
        command: ['CMD', '/healthcheck'],
        interval: Duration.seconds(30),
        timeout: Duration.seconds(5),
        retries: 3,
        startPeriod: Duration.seconds(10),
      },
      enableRestartPolicy: true,
      restartAttemptPeriod: Duration.seconds(60),
    });
    // Started first so the worker's first batch finds it; never waited on for health (the worker must run).
    worker.addContainerDependencies({ container: collector, condition: ContainerDependencyCondition.START });
    return collector;
  }

  private makeDashboard(name: string, workerErrors: IMetric): Dashboard {
    const period = Duration.minutes(5);
    // One line per dimension value found (models, codes, … are not known here), each labelled by its values
    // (`${LABEL}`, a dynamic label: CDK's default would repeat the expression on every line).
    const search = (metric: string, dims: string[], stat: string, prefix = '') =>
      new SearchExpression({
        expression: `SEARCH('{${METRICS_NAMESPACE},${dims.map((d) => `"${d}"`).join(',')}} MetricName="${metric}"', '${stat}')`,
        period,
        label: `${prefix}\${LABEL}`,
      });
    const metric = (metricName: string, statistic = 'Sum', dimensionsMap?: Record<string, string>) =>
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        statistic,
        period,
        ...(dimensionsMap ? { dimensionsMap } : {}),
      });
    const graph = (title: string, left: IMetric[], stacked = false) =>
      new GraphWidget({ title, left, width: 8, height: 6, stacked, ...(stacked ? {} : { leftYAxis: { min: 0 } }) });

    const dashboard = new Dashboard(this, 'Dashboard', { dashboardName: name, defaultInterval: Duration.hours(6) });
    dashboard.addWidgets(
      new TextWidget({
        markdown: `### OpenStarry agents\nNamespace \`${METRICS_NAMESPACE}\`, 5-minute sums. Traces: CloudWatch → Application Signals → Transaction Search (service \`openstarry-worker\`); a task's trace id is in \`starry status <agent> --json\`.`,
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      graph('Tasks by outcome', [search('starry.tasks', ['starry.task.outcome'], 'Sum')], true),
      graph('Tokens by model (input/output)', [
        search('gen_ai.client.token.usage', ['gen_ai.request.model', 'gen_ai.token.type'], 'Sum'),
      ]),
      graph('LLM latency by model (s)', [
        search('gen_ai.client.operation.duration', ['gen_ai.request.model'], 'p50', 'p50 '),
        search('gen_ai.client.operation.duration', ['gen_ai.request.model'], 'p95', 'p95 '),
        search('gen_ai.client.operation.duration', ['gen_ai.request.model'], 'Average', 'avg '),
      ]),
    );
    dashboard.addWidgets(
      graph('Pain by code', [search('starry.pain', ['starry.pain.code'], 'Sum')], true),
      graph('Breaker trips by rung', [search('starry.breaker.trips', ['starry.breaker.rung'], 'Sum')], true),
      graph('Lockouts by reason, halts', [
        search('starry.lockouts', ['starry.lockout.reason'], 'Sum'),
        metric('starry.halts').with({ label: 'halts' }),
      ]),
    );
    dashboard.addWidgets(
      graph('Tool duration by tool (s)', [
        search('starry.tool.duration', ['gen_ai.tool.name'], 'p95', 'p95 '),
        search('starry.tool.duration', ['gen_ai.tool.name'], 'Average', 'avg '),
      ]),
      graph('Ticks', [metric('starry.ticks').with({ label: 'ticks' })]),
      graph('Worker errors (log lines)', [workerErrors]),
    );
    return dashboard;
  }

  private makeAlarms(topic: ITopic) {
    const alarm = (id: string, metric: IMetric, description: string) =>
      new Alarm(this, id, {
        metric,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      }).addAlarmAction(new SnsAction(topic));
    const period = Duration.minutes(5);
    alarm(
      'LockoutAlarm',
      new Metric({ namespace: METRICS_NAMESPACE, metricName: 'starry.lockouts', statistic: 'Sum', period }),
      'An OpenStarry agent was locked out in the last 5 minutes (starry.lockouts); the alert topic has its reason',
    );
    alarm(
      'ErrorCascadeAlarm',
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName: 'starry.breaker.trips',
        dimensionsMap: { 'starry.breaker.rung': 'ERROR_CASCADE' },
        statistic: 'Sum',
        period,
      }),
      'An OpenStarry task tripped the error-cascade breaker in the last 5 minutes (starry.breaker.trips, rung ERROR_CASCADE)',
    );
  }
}
