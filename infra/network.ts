/**
 * The network and the ECS cluster: public subnets (the workers reach Temporal Cloud and LLM APIs; nothing
 * reaches them), with VPC flow logs. With the tool workers on EC2, private subnets behind one NAT gateway
 * too: a task with its own network interface on an EC2 instance (awsvpc) gets no public IP, so it reaches
 * out through NAT.
 *
 * ```ts
 * const network = new Network(stack, 'NetworkPart', { toolCompute: 'fargate', retention: RetentionDays.ONE_MONTH });
 * new FargateService(stack, 'Workers', { cluster: network.cluster, … });
 * ```
 */
import { CfnOutput, RemovalPolicy } from 'aws-cdk-lib';
import { FlowLogDestination, SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import { Cluster, ContainerInsights } from 'aws-cdk-lib/aws-ecs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { StackPart } from './stack-part';

export interface NetworkProps {
  /** Where the tool workers run: `ec2` adds the private subnets and the NAT gateway they need. */
  toolCompute: 'fargate' | 'ec2';
  retention: RetentionDays;
}

/** The VPC and the cluster every worker service runs in. */
export class Network extends StackPart {
  readonly vpc: Vpc;
  readonly cluster: Cluster;
  /** The subnets the tool workers run in: the private ones on EC2, else the public ones. */
  readonly toolSubnetType: SubnetType;

  constructor(scope: Construct, id: string, props: NetworkProps) {
    super(scope, id);
    const ec2 = props.toolCompute === 'ec2';
    const flowLogs = new LogGroup(this.stack, 'VpcFlowLogs', {
      retention: props.retention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.vpc = new Vpc(this.stack, 'Vpc', {
      maxAzs: 2,
      natGateways: ec2 ? 1 : 0,
      subnetConfiguration: [
        { name: 'public', subnetType: SubnetType.PUBLIC },
        ...(ec2 ? [{ name: 'tools', subnetType: SubnetType.PRIVATE_WITH_EGRESS }] : []),
      ],
      flowLogs: { all: { destination: FlowLogDestination.toCloudWatchLogs(flowLogs) } },
    });
    this.cluster = new Cluster(this.stack, 'Cluster', {
      vpc: this.vpc,
      containerInsightsV2: ContainerInsights.ENABLED,
    });
    this.toolSubnetType = ec2 ? SubnetType.PRIVATE_WITH_EGRESS : SubnetType.PUBLIC;
    new CfnOutput(this.stack, 'ClusterName', { value: this.cluster.clusterName });
  }
}
