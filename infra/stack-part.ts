/**
 * The base of StarryStack's parts (the network, the workers of one version, the API, …): a construct per
 * concern whose resources live in the stack's scope, not in its own.
 *
 * ```ts
 * class Alerts extends StackPart {
 *   readonly topic = new Topic(this.stack, 'Alerts'); // logical id Alerts…, as when the stack made it
 * }
 * ```
 */
import { Stack } from 'aws-cdk-lib';
import { Construct } from 'constructs';

/**
 * CDK derives a resource's logical id from its construct path, and with it a VPC's and a file system's
 * Name tags, a security group's default description and a task definition's family. A resource created
 * under a part's own scope would get a new path, and CloudFormation would replace it in a deployed stack:
 * an EFS file system or a bucket replaced is user data lost. So every part creates its resources with
 * `this.stack` as their scope, under the ids they always had; the part is an empty node of the tree that
 * names the concern, and its readonly properties are what the other parts need.
 */
export abstract class StackPart extends Construct {
  /** The scope of every resource this part creates. */
  protected readonly stack: Stack;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.stack = Stack.of(this);
  }
}
