/**
 * Daemon alerts (seeds: Fatal Pain → "triggers a daemon alarm"): a structured log line always, and an
 * HTTP POST of the same JSON to a webhook when the worker has one configured. A failed POST is
 * transient, so Temporal retries it with backoff.
 */
import { Context } from '@temporalio/activity';
import { normalizedError, type NormalizedError } from '../core/errors';
import type { AgentState, LockReason } from '../core/types';
import { classifyHttpStatus, classifyNetworkError } from '../core/provider-errors';
import { throwAsFailure } from './failures';

export interface AlertInput {
  agentId: string;
  taskId?: string;
  workflowId?: string;
  agentState: AgentState;
  reason: LockReason;
  error?: NormalizedError;
}

export interface AlertEvent extends AlertInput {
  type: 'openstarry.alert';
  severity: 'critical';
  /** The same on every retry of one alert (also sent as `Idempotency-Key`), so a receiver can drop repeats. */
  id: string;
  /** When the alert was raised (the same on every retry). */
  at: string;
}

/** Where alerts go. The webhook URL comes from the worker's environment, never from workflow input. */
export interface AlertSinks {
  log?: (line: string) => void;
  webhookUrl?: string;
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
  return {
    async alert(input: AlertInput): Promise<{ delivered: string[] }> {
      const info = Context.current().info;
      const event: AlertEvent = {
        type: 'openstarry.alert',
        severity: 'critical',
        id: `${info.workflowExecution ? `${info.workflowExecution.workflowId}/${info.workflowExecution.runId}` : input.agentId}/${info.activityId}`,
        at: new Date(info.scheduledTimestampMs).toISOString(),
        ...input,
      };
      // A retry is for the webhook: the log line was written by the first attempt, once per alert.
      if (info.attempt === 1) logLine(JSON.stringify(event));
      const delivered = ['log'];
      if (sinks.webhookUrl) {
        await postWebhook(sinks.webhookUrl, event);
        delivered.push('webhook');
      }
      return { delivered };
    },
  };
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
