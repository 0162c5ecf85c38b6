/**
 * The alert topic: the worker's alert activity and the stack's alarms publish here; an optional e-mail
 * address is subscribed to it.
 *
 * ```ts
 * const alerts = new Alerts(stack, 'AlertsPart', { email: 'ops@example.com' });
 * alerts.topic.grantPublish(taskRole);
 * ```
 */
import { CfnOutput } from 'aws-cdk-lib';
import { Subscription, SubscriptionProtocol, Topic } from 'aws-cdk-lib/aws-sns';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { StackPart } from './stack-part';

export interface AlertsProps {
  /** An e-mail address subscribed to the topic (it must confirm the subscription). */
  email?: string;
}

/** The SNS topic of the alerts. */
export class Alerts extends StackPart {
  readonly topic: Topic;

  constructor(scope: Construct, id: string, props: AlertsProps) {
    super(scope, id);
    this.topic = new Topic(this.stack, 'Alerts', { displayName: 'OpenStarry alerts', enforceSSL: true });
    if (props.email)
      new Subscription(this.stack, 'AlertEmail', {
        topic: this.topic,
        protocol: SubscriptionProtocol.EMAIL,
        endpoint: props.email,
      });
    new CfnOutput(this.stack, 'AlertTopicArn', { value: this.topic.topicArn });
    NagSuppressions.addResourceSuppressions(this.topic, [
      {
        id: 'AwsSolutions-SNS2',
        reason:
          'Alerts carry agent ids and reasons, no secrets; SSE with the AWS-managed key would block e-mail delivery setup without a CMK.',
      },
    ]);
  }
}
