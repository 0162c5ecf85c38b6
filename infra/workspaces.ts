/**
 * The workspaces on EFS (docs/DEPLOY.md#workspaces-on-efs): one encrypted file system every tool worker
 * mounts at WORKSPACE_ROOT, through an access point that makes every file the image's `node` user's, and
 * the tool call journal on the same file system, outside the workspaces. User data: kept when the stack
 * is deleted, backed up daily. Only the tool workers may reach it.
 *
 * ```ts
 * const workspaces = new Workspaces(stack, 'WorkspacesPart', { vpc });
 * workspaces.grantMount(toolRole);
 * const task = new FargateTaskDefinition(stack, 'Tools', { volumes: workspaces.volumes, … });
 * workspaces.mountOn(task.addContainer('worker', { … }));
 * workspaces.allowFrom(service);
 * ```
 */
import { CfnOutput, RemovalPolicy } from 'aws-cdk-lib';
import { type IConnectable, SecurityGroup, SubnetType, type IVpc } from 'aws-cdk-lib/aws-ec2';
import type { ContainerDefinition, Volume } from 'aws-cdk-lib/aws-ecs';
import {
  type AccessPoint,
  FileSystem,
  LifecyclePolicy,
  OutOfInfrequentAccessPolicy,
  ThroughputMode,
} from 'aws-cdk-lib/aws-efs';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { StackPart } from './stack-part';

/** Where the tool workers mount the EFS workspaces: the worker policy's one root. */
export const WORKSPACE_ROOT = '/workspaces';
/** The journal's directory on the file system (outside the workspaces) and where the tool workers mount it. */
const JOURNAL_PATH = '/journal';
export const JOURNAL_DIR = '/var/lib/starry/journal';
/**
 * The tool workers' policy (STARRY_WORKER_POLICY): the workspaces as the one root, the journal beside
 * them; every other limit the policy's default (docs/ARCHITECTURE.md#trust-boundary).
 */
export const TOOL_WORKER_POLICY = JSON.stringify({ roots: [WORKSPACE_ROOT], journalDir: JOURNAL_DIR });
/** The owner of every workspace file (the access point's POSIX user): the image's `node` user (Dockerfile). */
export const WORKSPACE_UID = 1000;

export interface WorkspacesProps {
  vpc: IVpc;
}

/** The file system, its two access points, and what a tool worker task needs to mount them. */
export class Workspaces extends StackPart {
  readonly fileSystem: FileSystem;
  readonly workspaceAccess: AccessPoint;
  /**
   * The tool call journal (the policy's journalDir): an `fs.write` append retried on another tool
   * worker is still applied once, and no agent can reach it.
   */
  readonly journalAccess: AccessPoint;
  /** A tool worker task definition's volumes: each mounted with TLS and IAM authorization, through its access point. */
  readonly volumes: Volume[];

  constructor(scope: Construct, id: string, props: WorkspacesProps) {
    super(scope, id);
    const { vpc } = props;
    this.fileSystem = new FileSystem(this.stack, 'Workspaces', {
      vpc,
      vpcSubnets: { subnetType: SubnetType.PUBLIC },
      encrypted: true,
      enableAutomaticBackups: true,
      throughputMode: ThroughputMode.ELASTIC,
      // Files untouched for 30 days move to Infrequent Access, and back on their first read.
      lifecyclePolicy: LifecyclePolicy.AFTER_30_DAYS,
      outOfInfrequentAccessPolicy: OutOfInfrequentAccessPolicy.AFTER_1_ACCESS,
      removalPolicy: RemovalPolicy.RETAIN,
      securityGroup: new SecurityGroup(this.stack, 'WorkspacesSecurityGroup', {
        vpc,
        description: 'EFS workspaces: NFS from the tool workers only',
        allowAllOutbound: false,
      }),
    });
    // Every file through them is the image's `node` user's.
    const accessPoint = (apId: string, root: string, permissions: string) =>
      this.fileSystem.addAccessPoint(apId, {
        path: root,
        posixUser: { uid: String(WORKSPACE_UID), gid: String(WORKSPACE_UID) },
        createAcl: { ownerUid: String(WORKSPACE_UID), ownerGid: String(WORKSPACE_UID), permissions },
      });
    this.workspaceAccess = accessPoint('WorkspaceAccess', WORKSPACE_ROOT, '750');
    this.journalAccess = accessPoint('JournalAccess', JOURNAL_PATH, '700');
    const volume = (name: string, access: AccessPoint): Volume => ({
      name,
      efsVolumeConfiguration: {
        fileSystemId: this.fileSystem.fileSystemId,
        transitEncryption: 'ENABLED',
        authorizationConfig: { accessPointId: access.accessPointId, iam: 'ENABLED' },
      },
    });
    this.volumes = [volume('workspaces', this.workspaceAccess), volume('journal', this.journalAccess)];
    new CfnOutput(this.stack, 'WorkspaceFileSystemId', {
      value: this.fileSystem.fileSystemId,
      description: 'The EFS file system of the workspaces (kept when the stack is deleted)',
    });
  }

  /** Let a role mount and write through the access points only (no root access, no other path). */
  grantMount(role: IRole): void {
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['elasticfilesystem:ClientMount', 'elasticfilesystem:ClientWrite'],
        resources: [this.fileSystem.fileSystemArn],
        conditions: {
          StringEquals: {
            'elasticfilesystem:AccessPointArn': [
              this.workspaceAccess.accessPointArn,
              this.journalAccess.accessPointArn,
            ],
          },
        },
      }),
    );
  }

  /** Mount the workspaces at WORKSPACE_ROOT and the journal at JOURNAL_DIR in a tool worker's container. */
  mountOn(container: ContainerDefinition): void {
    const [workspaces, journal] = this.volumes as [Volume, Volume];
    container.addMountPoints(
      { sourceVolume: workspaces.name, containerPath: WORKSPACE_ROOT, readOnly: false },
      { sourceVolume: journal.name, containerPath: JOURNAL_DIR, readOnly: false },
    );
  }

  /** Open NFS to a tool worker service (the file system's security group allows nothing else). */
  allowFrom(service: IConnectable): void {
    this.fileSystem.connections.allowDefaultPortFrom(service, 'NFS from the tool workers');
  }
}
