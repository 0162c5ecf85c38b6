/**
 * The transcript store on S3 (activities/store/): blobs named by their SHA-256, which task histories
 * refer to. Kept when the stack is deleted, and never expired here: deleting a blob a live (or suspended,
 * waiting for a human) task refers to breaks that task. Not versioned: a key's content never changes.
 *
 * ```ts
 * const transcripts = new Transcripts(stack, 'TranscriptsPart');
 * transcripts.bucket.grantRead(taskRole);
 * ```
 */
import { CfnOutput, RemovalPolicy } from 'aws-cdk-lib';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { StackPart } from './stack-part';

/** The transcript bucket. */
export class Transcripts extends StackPart {
  readonly bucket: Bucket;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.bucket = new Bucket(this.stack, 'Transcripts', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      versioned: false,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    new CfnOutput(this.stack, 'TranscriptBucketName', { value: this.bucket.bucketName });
    NagSuppressions.addResourceSuppressions(this.bucket, [
      {
        id: 'AwsSolutions-S1',
        reason:
          "Only the workers' task role reads and writes it, by content hash; CloudTrail data events audit it when needed, without a second bucket of access logs.",
      },
    ]);
  }
}
