/**
 * The workers' own AWS identities, one per kind and shared by every version. The workflow workers' task
 * role may publish alerts, read and write transcript blobs and call the Bedrock models the deployment
 * names; the tool workers' (no LLM key) may read and write transcript blobs and mount the workspaces. Both
 * send their collector's telemetry when observability is on. Nothing else: no delete (the store never
 * deletes: content-addressed, shared).
 *
 * ```ts
 * const roles = new WorkerRoles(stack, 'WorkerRolesPart', { alertTopic, transcripts, workspaces, bedrockModels: [] });
 * new FargateTaskDefinition(stack, 'Task', { taskRole: roles.workflow });
 * ```
 */
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { type IRole, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { bedrockInvokeArns } from '../core/llm-spec';
import { StackPart } from './stack-part';
import type { Workspaces } from './workspaces';

export interface WorkerRolesProps {
  alertTopic: ITopic;
  transcripts: IBucket;
  workspaces: Workspaces;
  /** Bedrock model ids, inference profile ids or ARNs the workflow workers may call (none: no Bedrock). */
  bedrockModels: string[];
  /** What grants a role its telemetry (the Observability part); unset: observability is off. */
  telemetry?: { grantTelemetry(role: IRole): void };
}

/** The two task roles. */
export class WorkerRoles extends StackPart {
  /** The workflow workers' task role. */
  readonly workflow: Role;
  /** The tool workers' task role. */
  readonly tools: Role;

  constructor(scope: Construct, id: string, props: WorkerRolesProps) {
    super(scope, id);
    const principal = () => new ServicePrincipal('ecs-tasks.amazonaws.com');
    this.workflow = new Role(this.stack, 'WorkerTaskRole', { assumedBy: principal() });
    props.alertTopic.grantPublish(this.workflow);
    props.transcripts.grantRead(this.workflow);
    props.transcripts.grantPut(this.workflow);
    this.grantBedrock(props.bedrockModels);
    props.telemetry?.grantTelemetry(this.workflow);

    this.tools = new Role(this.stack, 'ToolWorkerTaskRole', { assumedBy: principal() });
    // A tool result is kept in the transcript store (the message the LLM will see refers to it).
    props.transcripts.grantRead(this.tools);
    props.transcripts.grantPut(this.tools);
    props.telemetry?.grantTelemetry(this.tools);
    props.workspaces.grantMount(this.tools);

    for (const role of [this.workflow, this.tools])
      NagSuppressions.addResourceSuppressions(
        role,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason:
              "Transcript blobs are objects named by their hash, unknown in advance: the role reads and writes any object of its own bucket (CDK's grantRead and grantPut actions), and deletes none.",
            appliesTo: [
              'Action::s3:GetObject*',
              'Action::s3:GetBucket*',
              'Action::s3:List*',
              'Action::s3:Abort*',
              { regex: '/^Resource::<Transcripts[0-9A-F]+\\.Arn>\\/\\*$/' },
            ],
          },
        ],
        true,
      );
  }

  /** Converse is bedrock:InvokeModel, on the models the deployment names only. */
  private grantBedrock(models: string[]): void {
    const { partition, region, account } = this.stack;
    const arns = models.flatMap((model) => bedrockInvokeArns(model, { partition, region, account }));
    if (!arns.length) return;
    this.workflow.addToPolicy(new PolicyStatement({ actions: ['bedrock:InvokeModel'], resources: arns }));
    NagSuppressions.addResourceSuppressions(
      this.workflow,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'A cross-region inference profile routes each call to its model in one of several regions, which it picks: the named model is allowed in any region, and no other model.',
          appliesTo: [{ regex: '/^Resource::arn:<AWS::Partition>:bedrock:\\*::foundation-model\\/[^*]+$/' }],
        },
      ],
      true,
    );
  }
}
