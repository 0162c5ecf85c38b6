/**
 * The tool workers' EC2 capacity (`toolCompute: 'ec2'`, docs/DEPLOY.md#tool-workers): an Auto Scaling
 * group of ECS-optimized Amazon Linux 2023 instances in the private subnets, scaled by ECS (a capacity
 * provider). IMDSv2 only, one hop: a container cannot reach the instance role; encrypted root volumes; the
 * instance role has the ECS agent's policy only.
 *
 * ```ts
 * const instances = new ToolInstances(stack, 'ToolInstancesPart', { cluster, vpc, maxInstances: 4 });
 * new Ec2Service(stack, 'Tools', { capacityProviderStrategies: [{ capacityProvider: instances.provider.capacityProviderName, weight: 1 }], … });
 * ```
 */
import { AutoScalingGroup, BlockDeviceVolume, EbsDeviceVolumeType } from 'aws-cdk-lib/aws-autoscaling';
import { type IVpc, InstanceType, LaunchTemplate, SecurityGroup, SubnetType, UserData } from 'aws-cdk-lib/aws-ec2';
import { AsgCapacityProvider, type Cluster, EcsOptimizedImage } from 'aws-cdk-lib/aws-ecs';
import { ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { StackPart } from './stack-part';

export interface ToolInstancesProps {
  cluster: Cluster;
  vpc: IVpc;
  /** The instance type; default t3.medium. */
  instanceType?: string;
  /** The group's maximum size: one instance per tool worker task at most. */
  maxInstances: number;
}

/** The instances and the capacity provider the tool services run on. */
export class ToolInstances extends StackPart {
  readonly provider: AsgCapacityProvider;

  constructor(scope: Construct, id: string, props: ToolInstancesProps) {
    super(scope, id);
    const instanceRole = new Role(this.stack, 'ToolInstanceRole', {
      assumedBy: new ServicePrincipal('ec2.amazonaws.com'),
      managedPolicies: [ManagedPolicy.fromAwsManagedPolicyName('service-role/AmazonEC2ContainerServiceforEC2Role')],
    });
    // Unprivileged user namespaces for bubblewrap, however the AMI's default is set; and no instance
    // metadata for a task with its own network interface (awsvpc), which the hop limit does not stop.
    const userData = UserData.forLinux();
    userData.addCommands(
      "echo 'user.max_user_namespaces = 15000' > /etc/sysctl.d/90-openstarry-userns.conf",
      'sysctl --system',
      'echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config',
    );
    const template = new LaunchTemplate(this.stack, 'ToolInstanceTemplate', {
      machineImage: EcsOptimizedImage.amazonLinux2023(),
      instanceType: new InstanceType(props.instanceType ?? 't3.medium'),
      userData,
      role: instanceRole,
      requireImdsv2: true,
      httpPutResponseHopLimit: 1,
      securityGroup: new SecurityGroup(this.stack, 'ToolInstanceSecurityGroup', {
        vpc: props.vpc,
        description: 'Tool worker instances: outbound only',
      }),
      blockDevices: [
        {
          deviceName: '/dev/xvda',
          volume: BlockDeviceVolume.ebs(30, { encrypted: true, volumeType: EbsDeviceVolumeType.GP3 }),
        },
      ],
    });
    const group = new AutoScalingGroup(this.stack, 'ToolInstances', {
      vpc: props.vpc,
      vpcSubnets: { subnetType: SubnetType.PRIVATE_WITH_EGRESS },
      launchTemplate: template,
      minCapacity: 0,
      maxCapacity: props.maxInstances,
    });
    this.provider = new AsgCapacityProvider(this.stack, 'ToolCapacity', { autoScalingGroup: group });
    props.cluster.addAsgCapacityProvider(this.provider);
    suppressFindings(instanceRole, group);
  }
}

/** cdk-nag findings of the instance role and the group, acknowledged. */
function suppressFindings(instanceRole: Role, group: AutoScalingGroup): void {
  NagSuppressions.addResourceSuppressions(
    instanceRole,
    [
      {
        id: 'AwsSolutions-IAM4',
        reason:
          "AmazonEC2ContainerServiceforEC2Role is the ECS agent's own policy (register the instance, pull images, send logs): the role has nothing else.",
        appliesTo: ['Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonEC2ContainerServiceforEC2Role'],
      },
      {
        id: 'AwsSolutions-IAM5',
        reason:
          'The statements CDK adds for the ECS agent of a capacity provider (ecs:Submit*, ecs:Poll and the like on the cluster, with Resource * where ECS has no resource-level permissions).',
        appliesTo: ['Action::ecs:Submit*', 'Resource::*'],
      },
    ],
    true,
  );
  NagSuppressions.addResourceSuppressions(group, [
    {
      id: 'AwsSolutions-AS3',
      reason:
        'ECS scales the group (managed scaling): its launches and terminations follow the tool service, whose failures the worker-error alarm already pages.',
    },
  ]);
}
