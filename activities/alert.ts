/**
 * Daemon alerts (seeds: Fatal Pain → "triggers a daemon alarm"): a structured log line always, an HTTP
 * POST of the same JSON to a webhook, and a message on an SNS topic, when the worker has them
 * configured. A sink that fails transiently is retried by Temporal with backoff; a sink that delivered
 * is remembered in the activity's heartbeat details, so a retry never delivers twice (never pages twice).
 */
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { Context } from '@temporalio/activity';
import type { AlertKind, AlertNotice, AlertSeverity } from '../core/alerts';
import { normalizedError, type NormalizedError } from '../core/errors';
import { classifyHttpStatus, classifyNetworkError } from '../core/errors/http';
import { agentWorkflowId, webUiLink } from '../workflows/messages';
import { throwAsFailure } from './failures';

/**
 * What the workflow asks to send: a notice of core/alerts.ts and whom it is about. `kind`, `severity`,
 * `command` and `action` may be absent in an input scheduled by an older workflow (a retry that reaches
 * this code): it was a lockout, and every alert was critical then.
 */
export interface AlertInput extends Partial<Pick<AlertNotice, 'kind' | 'severity' | 'command' | 'action'>> {
  agentId: string;
  taskId?: string;
  workflowId?: string;
  agentState: AlertNotice['agentState'];
  reason: AlertNotice['reason'];
  error?: NormalizedError;
}

/** The alert as every sink receives it (docs/ARCHITECTURE.md#daemon-alerts). */
export interface AlertEvent extends AlertInput {
  type: 'openstarry.alert';
  kind: AlertKind;
  severity: AlertSeverity;
  /** The same on every retry of one alert (also sent as `Idempotency-Key`), so a receiver can drop repeats. */
  id: string;
  /** When the alert was raised (the same on every retry). */
  at: string;
  /** The task (or agent) workflow in the Web UI, when the worker knows the UI's address (STARRY_UI_URL). */
  link?: string;
}

/** Where alerts go. The webhook URL comes from the worker's environment, never from workflow input. */
export interface AlertSinks {
  log?: (line: string) => void;
  webhookUrl?: string;
  /** An SNS topic (STARRY_ALERT_TOPIC_ARN); a FIFO topic deduplicates by the alert id as well. */
  snsTopicArn?: string;
  /** The SNS client (tests point it at a local server); default: the AWS SDK's, from the environment. */
  sns?: SNSClient;
  /** The Web UI's base URL, for the alert's link (STARRY_UI_URL). */
  uiUrl?: string;
  namespace?: string;
}

/**
 * Create the `alert` activity.
 *
 * ```ts
 * createAlertActivities({ webhookUrl: process.env.STARRY_ALERT_WEBHOOK })
 * ```
 */
export function createAlertActivities(sinks: AlertSinks = {}) {
  const logLine = sinks.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  let sns = sinks.sns;
  return {
    async alert(input: AlertInput): Promise<{ delivered: string[] }> {
      const ctx = Context.current();
      const info = ctx.info;
      const workflowId = input.workflowId ?? agentWorkflowId(input.agentId);
      const event: AlertEvent = {
        type: 'openstarry.alert',
        kind: 'lockout',
        severity: 'critical',
        id: `${info.workflowExecution ? `${info.workflowExecution.workflowId}/${info.workflowExecution.runId}` : input.agentId}/${info.activityId}`,
        at: new Date(info.scheduledTimestampMs).toISOString(),
        ...input,
        ...(sinks.uiUrl ? { link: webUiLink(sinks.uiUrl, workflowId, sinks.namespace) } : {}),
      };
      // What earlier attempts delivered (heartbeat details survive a failed attempt): never twice.
      const done = new Set<string>(
        ((info.heartbeatDetails as { delivered?: string[] } | undefined)?.delivered ?? []).concat(
          info.attempt > 1 ? ['log'] : [],
        ),
      );
      const deliver = async (sink: string, send: () => Promise<void> | void) => {
        if (done.has(sink)) return;
        await send();
        done.add(sink);
        ctx.heartbeat({ delivered: [...done] });
      };
      await deliver('log', () => logLine(JSON.stringify(event)));
      if (sinks.snsTopicArn)
        await deliver('sns', () => publishSns((sns ??= new SNSClient({})), sinks.snsTopicArn as string, event));
      if (sinks.webhookUrl) await deliver('webhook', () => postWebhook(sinks.webhookUrl as string, event));
      return { delivered: [...done] };
    },
  };
}

/**
 * Publish the alert to SNS: the JSON as the message, the severity in the subject, the id, agent, kind
 * and severity as message attributes (for subscription filter policies), the id also as the
 * deduplication id of a FIFO topic. Throttling and 5xx are transient (retried); any other refusal
 * (access denied, a missing topic) fails the alert activity at once — never the agent, which logs it.
 */
async function publishSns(client: SNSClient, topicArn: string, event: AlertEvent): Promise<void> {
  const fifo = topicArn.endsWith('.fifo');
  // The severity first, so a mail client's list tells a warning from a critical alert.
  const subject = `OpenStarry ${event.severity}: agent ${event.agentId} ${event.agentState} (${event.reason.code})`;
  try {
    await client.send(
      new PublishCommand({
        TopicArn: topicArn,
        Subject: subject.slice(0, 100),
        Message: JSON.stringify(event),
        MessageAttributes: {
          alertId: { DataType: 'String', StringValue: event.id },
          agentId: { DataType: 'String', StringValue: event.agentId },
          kind: { DataType: 'String', StringValue: event.kind },
          severity: { DataType: 'String', StringValue: event.severity },
        },
        ...(fifo
          ? {
              MessageGroupId: event.agentId,
              MessageDeduplicationId: event.id.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 128),
            }
          : {}),
      }),
    );
  } catch (err) {
    const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number }; $retryable?: unknown };
    const status = e.$metadata?.httpStatusCode ?? 0;
    const transient =
      status >= 500 ||
      status === 429 ||
      /Throttl|TooManyRequests|ServiceUnavailable|InternalError|TimeoutError/i.test(e.name ?? '') ||
      !!e.$retryable ||
      status === 0;
    const error = normalizedError({
      code: transient ? 'E_UNAVAILABLE' : 'E_AUTH',
      kind: transient ? 'transient' : 'fatal',
      source: 'alert sns',
      message: `${e.name ?? 'Error'}: ${e.message ?? String(err)}`,
    });
    throwAsFailure(error);
  }
}

async function postWebhook(url: string, event: AlertEvent): Promise<void> {
  const source = 'alert webhook';
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': event.id },
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throwAsFailure(
      classifyNetworkError(err, source) ??
        normalizedError({ code: 'E_UNAVAILABLE', kind: 'transient', source, message: (err as Error).message }),
    );
  }
  if (!res.ok) {
    const e = classifyHttpStatus({ status: res.status, message: await res.text().catch(() => ''), source });
    // Any refusal of the webhook is retried: an alert must not be dropped on a receiver's bad minute.
    throwAsFailure({ ...e, kind: 'transient' });
  }
}
