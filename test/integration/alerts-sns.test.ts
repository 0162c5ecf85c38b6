/**
 * Daemon alerts on SNS, against a real SNS wire implementation (a local `moto` server, started here):
 * a fatal error raises an alert that reaches an SQS queue subscribed to the topic exactly once per
 * alert id, even when another sink (the webhook) makes the activity retry; a budget stop's is a
 * warning, in the subject too; a topic the worker may not
 * publish to fails the alert activity, never the agent.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { AlertEvent } from '../../activities/alert';
import { expectWarnings } from '../helpers/expected-logs';
import { startHarness, uniqueId, type Harness } from '../helpers/harness';
import { startMoto, type Moto } from '../helpers/moto';
import { runScenario, SCENARIOS } from '../helpers/scenarios';
import { completedAttempts, hasCompleted, settledHistory } from '../helpers/workflow-history';
import { agentWorkflowId } from '../../workflows/messages';

// An alert that cannot be delivered is logged by the agent (and the failed activity by the worker): provoked here on
// purpose.
expectWarnings(/^the daemon alert could not be delivered/);

jest.setTimeout(120_000);

let moto: Moto;
let sns: SNSClient;
let sqs: SQSClient;
let webhook: http.Server;
let refusalsLeft = 0;
const harnesses: Harness[] = [];

beforeAll(async () => {
  moto = await startMoto();
  const aws = {
    endpoint: moto.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  };
  sns = new SNSClient(aws);
  sqs = new SQSClient(aws);
  webhook = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const refuse = refusalsLeft-- > 0;
      res.writeHead(refuse ? 503 : 200).end(refuse ? 'busy' : 'ok');
    });
  });
  await new Promise<void>((r) => webhook.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  for (const h of harnesses) await h.stop();
  await new Promise((r) => webhook?.close(r));
  await moto?.stop();
});

/**
 * A topic with an SQS queue subscribed to it. Raw delivery (the default): the queue gets the alert JSON
 * itself; otherwise SNS's envelope, which carries the subject too.
 */
async function topicWithQueue(raw = true): Promise<{ topicArn: string; queueUrl: string }> {
  const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: uniqueId('starry-alerts') }));
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: uniqueId('starry-alerts-q') }));
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  await sns.send(
    new SubscribeCommand({
      TopicArn,
      Protocol: 'sqs',
      Endpoint: Attributes?.QueueArn,
      Attributes: { RawMessageDelivery: String(raw) },
    }),
  );
  return { topicArn: TopicArn as string, queueUrl: QueueUrl as string };
}

/** Every message the queue holds now (moto delivers synchronously on publish). */
async function drain(queueUrl: string): Promise<{ body: string; attributes: Record<string, string | undefined> }[]> {
  const out: { body: string; attributes: Record<string, string | undefined> }[] = [];
  for (;;) {
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
        WaitTimeSeconds: 1,
      }),
    );
    if (!Messages?.length) return out;
    for (const m of Messages)
      out.push({
        body: m.Body ?? '',
        attributes: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue])),
      });
  }
}

async function harnessFor(snsTopicArn: string): Promise<Harness> {
  const webhookUrl = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/alerts`;
  const h = await startHarness({
    name: 'alerts-sns',
    activities: { alerts: { snsTopicArn, sns, webhookUrl, uiUrl: 'http://ui.example:8233', log: () => undefined } },
  });
  harnesses.push(h);
  return h;
}

describe('alerts on SNS', () => {
  it('publishes a fatal error once per alert id, with the agent, the reason and the workflow link, across activity retries', async () => {
    const { topicArn, queueUrl } = await topicWithQueue();
    const h = await harnessFor(topicArn);
    refusalsLeft = 2; // the webhook refuses twice: the activity runs three times
    const run = await runScenario(h, SCENARIOS.fatalLlm);
    expect(run.result).toMatchObject({ outcome: 'FAILED', agentState: 'ERROR_PAUSED', reason: { code: 'FATAL' } });
    const history = await settledHistory(h.agents.client, agentWorkflowId(run.agentId), hasCompleted('alert'));
    expect(completedAttempts(history, 'alert')).toEqual([3]);

    const messages = await drain(queueUrl);
    expect(messages).toHaveLength(1);
    const event = JSON.parse(messages[0]!.body) as AlertEvent;
    expect(event).toMatchObject({
      type: 'openstarry.alert',
      kind: 'lockout',
      severity: 'critical',
      agentId: run.agentId,
      agentState: 'ERROR_PAUSED',
      reason: { code: 'FATAL' },
      command: `starry unlock ${run.agentId}`,
      link: `http://ui.example:8233/namespaces/default/workflows/${encodeURIComponent(run.workflowId)}`,
    });
    expect(messages[0]!.attributes).toEqual({
      alertId: event.id,
      agentId: run.agentId,
      kind: 'lockout',
      severity: 'critical',
    });
  });

  it('publishes a budget stop as a warning: in the subject, the attributes and the event, with the unlock command', async () => {
    const { topicArn, queueUrl } = await topicWithQueue(false);
    const h = await harnessFor(topicArn);
    refusalsLeft = 0;
    const run = await runScenario(h, SCENARIOS.budgetStop);
    expect(run.result).toMatchObject({
      outcome: 'SUSPENDED',
      agentState: 'STOPPED',
      reason: { code: 'BUDGET_EXHAUSTED' },
    });
    await settledHistory(h.agents.client, agentWorkflowId(run.agentId), hasCompleted('alert'));

    const messages = await drain(queueUrl);
    expect(messages).toHaveLength(1);
    const envelope = JSON.parse(messages[0]!.body) as {
      Subject: string;
      Message: string;
      MessageAttributes: Record<string, { Value: string }>;
    };
    expect(envelope.Subject).toBe(`OpenStarry warning: agent ${run.agentId} STOPPED (BUDGET_EXHAUSTED)`);
    expect(envelope.MessageAttributes.severity?.Value).toBe('warning');
    expect(JSON.parse(envelope.Message)).toMatchObject({
      kind: 'lockout',
      severity: 'warning',
      agentId: run.agentId,
      reason: { code: 'BUDGET_EXHAUSTED' },
      command: `starry unlock ${run.agentId} --resume --add-tokens N`,
    });
  });

  it('fails only the alert activity, at once, when the topic refuses the worker; the agent stays paused and answers', async () => {
    const h = await harnessFor('arn:aws:sns:us-east-1:123456789012:no-such-topic');
    refusalsLeft = 0;
    const run = await runScenario(h, SCENARIOS.fatalLlm, { agentId: uniqueId('sns-refused') });
    expect(run.result).toMatchObject({ outcome: 'FAILED', agentState: 'ERROR_PAUSED' });
    const history = await settledHistory(h.agents.client, agentWorkflowId(run.agentId), (hist) =>
      (hist.events ?? []).some((e) => e.activityTaskFailedEventAttributes),
    );
    const failed = (history.events ?? []).find(
      (e) => e.activityTaskFailedEventAttributes,
    )?.activityTaskFailedEventAttributes;
    expect(failed?.failure?.message).toMatch(/^E_AUTH: NotFound/);
    expect(failed?.retryState).toBe(2); // NON_RETRYABLE_FAILURE: not retried
    expect(await h.agents.status(run.agentId)).toMatchObject({ agentState: 'ERROR_PAUSED', reason: { code: 'FATAL' } });
  });
});
