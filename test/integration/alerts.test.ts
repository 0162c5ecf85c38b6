/**
 * Daemon alerts through real workflows (docs/ARCHITECTURE.md#daemon-alerts): every lock the agent puts
 * itself in — a fatal error, the error cascade, the loop cap, a repeated failure, a budget stop — makes
 * the agent's `alert` activity write a structured log line and POST the same JSON to a webhook (here a
 * real HTTP receiver on 127.0.0.1 that this test starts), once per lock, with its severity, reason and
 * unlock command; a halt by a human raises none; a refused POST is retried as transient.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import type { AlertEvent } from '../../activities/alert';
import { RefusedError } from '../../client/agent-client';
import { eventually } from '../../dev/poll';
import { expectWarnings } from '../helpers/expected-logs';
import { startHarness, uniqueId, type Harness } from '../helpers/harness';
import {
  contractViolations,
  done,
  LIST,
  runScenario,
  SCENARIOS,
  times,
  turn,
  type ScenarioRun,
} from '../helpers/scenarios';
import {
  activityRunning,
  completedAttempts,
  hasCompleted,
  replayAll,
  scheduledInputs,
  settledHistory,
  type History,
} from '../helpers/workflow-history';
import { agentWorkflowId, taskWorkflowId } from '../../workflows/messages';

// An alert that cannot be delivered is logged by the agent (and the failed activity by the worker): provoked here on
// purpose.
expectWarnings(/^the daemon alert could not be delivered/, /^Activity failed/);

// The retried webhook waits for Temporal's backoff (1 s, then 2 s); replays start a replay worker.
jest.setTimeout(60_000);

interface Post {
  method?: string;
  contentType?: string;
  idempotencyKey?: string | string[];
  body: AlertEvent;
}

let h: Harness;
let server: http.Server;
const posts: Post[] = [];
const lines: string[] = [];
/** Statuses the receiver answers for an agent's alerts before it accepts one with 200. */
const refusals = new Map<string, number[]>();
/** Agents whose alerts the log sink refuses for good, as a sink that is down would. */
const brokenLogFor = new Set<string>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (data += chunk));
    req.on('end', () => {
      const body = JSON.parse(data) as AlertEvent;
      posts.push({
        method: req.method,
        contentType: req.headers['content-type'],
        idempotencyKey: req.headers['idempotency-key'],
        body,
      });
      const status = refusals.get(body.agentId)?.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'try again later');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const webhookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`;
  const log = (line: string) => {
    if (brokenLogFor.has((JSON.parse(line) as AlertEvent).agentId))
      throw ApplicationFailure.nonRetryable('the log sink is down', 'SinkDown');
    lines.push(line);
  };
  h = await startHarness({ name: 'alerts', activities: { alerts: { webhookUrl, log } } });
});
afterAll(async () => {
  await h?.stop();
  await new Promise((resolve) => server?.close(resolve));
});

const postsFor = (agentId: string) => posts.filter((p) => p.body.agentId === agentId);
const logFor = (agentId: string) => lines.map((l) => JSON.parse(l) as AlertEvent).filter((e) => e.agentId === agentId);
/** The agent's history once its alert activity has completed. */
const afterAlert = (run: ScenarioRun) =>
  settledHistory(h.agents.client, agentWorkflowId(run.agentId), hasCompleted('alert'));

describe('the fatal path', () => {
  it('fails the task on an LLM 401, pauses the agent (ERROR_PAUSED, FATAL) and raises one alert through the log and the webhook', async () => {
    const run = await runScenario(h, SCENARIOS.fatalLlm);
    const r = run.result;
    expect(contractViolations(r)).toEqual([]);
    expect(r).toMatchObject({
      outcome: 'FAILED',
      agentState: 'ERROR_PAUSED',
      reason: { code: 'FATAL' },
      error: { code: 'E_AUTH', kind: 'fatal' },
    });
    expect(r.reason?.message).toMatch(/^E_AUTH: HTTP 401/);

    const history = await afterAlert(run);
    expect(completedAttempts(history, 'alert')).toEqual([1]);
    const expected = {
      type: 'openstarry.alert',
      kind: 'lockout',
      severity: 'critical',
      command: `starry unlock ${run.agentId}`,
      action: expect.stringMatching(/^Fix the cause named in the reason .*, then `starry unlock /),
      agentId: run.agentId,
      taskId: run.taskId,
      workflowId: run.workflowId,
      agentState: 'ERROR_PAUSED',
      reason: { code: 'FATAL', message: r.reason?.message },
      error: { code: 'E_AUTH', kind: 'fatal' },
    };
    const delivered = postsFor(run.agentId);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ method: 'POST', contentType: 'application/json', body: expected });
    expect(new Date(delivered[0]?.body.at ?? '').toISOString()).toBe(delivered[0]?.body.at);
    expect(delivered[0]?.body.id).toMatch(new RegExp(`^${agentWorkflowId(run.agentId)}/[0-9a-f-]+/\\d+$`));
    expect(delivered[0]?.idempotencyKey).toBe(delivered[0]?.body.id);
    // The log line is the same JSON event.
    expect(logFor(run.agentId)).toEqual([delivered[0]?.body]);

    const status = await h.agents.status(run.agentId);
    expect(status).toMatchObject({ agentState: 'ERROR_PAUSED', reason: { code: 'FATAL' } });
    await expect(h.agents.submit(run.agentId, { goal: 'anything', config: run.config })).rejects.toThrow(RefusedError);
    const reports = await replayAll(h.agents.client, [run.workflowId, agentWorkflowId(run.agentId)]);
    expect(reports.map((x) => [x.workflowType, x.ok, x.error])).toEqual([
      ['taskWorkflow', true, undefined],
      ['agentWorkflow', true, undefined],
    ]);
  });

  it('retries a webhook that answers 503 twice, as a transient failure, until it accepts the alert', async () => {
    const agentId = uniqueId('fatal-retried');
    refusals.set(agentId, [503, 503]);
    const run = await runScenario(h, SCENARIOS.fatalLlm, { agentId });
    expect(run.result).toMatchObject({ outcome: 'FAILED', agentState: 'ERROR_PAUSED', reason: { code: 'FATAL' } });

    const history = await afterAlert(run);
    expect(completedAttempts(history, 'alert')).toEqual([3]);
    const delivered = postsFor(agentId);
    expect(delivered).toHaveLength(3);
    for (const p of delivered)
      expect(p.body).toMatchObject({ type: 'openstarry.alert', agentId, reason: { code: 'FATAL' } });
    // One alert, three deliveries: the same id, key and body each time, so the receiver can drop repeats.
    expect(new Set(delivered.map((p) => JSON.stringify(p.body))).size).toBe(1);
    expect(delivered.map((p) => p.idempotencyKey)).toEqual(Array(3).fill(delivered[0]?.body.id));
    // The log sink took the alert once; only the webhook needed the retries.
    expect(logFor(agentId)).toHaveLength(1);
  });

  it('treats a workspace root that is missing and cannot be made as fatal: the tool’s E_INTERNAL fails the task, pauses the agent and raises an alert', async () => {
    const run = await runScenario(h, SCENARIOS.fatalTool);
    const r = run.result;
    expect(contractViolations(r)).toEqual([]);
    expect(r).toMatchObject({
      outcome: 'FAILED',
      agentState: 'ERROR_PAUSED',
      reason: { code: 'FATAL' },
      error: { code: 'E_INTERNAL', kind: 'fatal', source: 'fs.read' },
    });
    expect(r.error?.message).toContain(run.workspace);
    expect(r.toolCalls.map((c) => [c.tick, c.name, c.status, c.error?.code])).toEqual([
      [1, 'fs.read', 'failed', 'E_INTERNAL'],
    ]);

    await afterAlert(run);
    const delivered = postsFor(run.agentId);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.body).toMatchObject({
      agentState: 'ERROR_PAUSED',
      reason: { code: 'FATAL' },
      error: { code: 'E_INTERNAL', source: 'fs.read' },
    });
    expect(logFor(run.agentId)).toHaveLength(1);
  });
});

describe('every lockout is heard', () => {
  /** The one alert the agent raised for `run`, through the webhook and the log, once its activity completed. */
  async function oneAlert(run: ScenarioRun): Promise<AlertEvent> {
    const history = await afterAlert(run);
    expect(completedAttempts(history, 'alert')).toEqual([1]);
    const delivered = postsFor(run.agentId);
    expect(delivered).toHaveLength(1);
    expect(logFor(run.agentId)).toEqual([delivered[0]?.body]);
    return delivered[0]!.body;
  }

  it.each([
    ['the error cascade', 'ERROR_PAUSED', 'ERROR_CASCADE', 'critical', ' --resume', SCENARIOS.frustrationCascade],
    ['the loop cap', 'SAFETY_LOCKOUT', 'LOOP_CAP', 'warning', ' --resume', SCENARIOS.loopCap],
    ['a repeated failure', 'SAFETY_LOCKOUT', 'REPEATED_FAILURE', 'warning', ' --resume', SCENARIOS.repeatLockout],
    ['a budget stop', 'STOPPED', 'BUDGET_EXHAUSTED', 'warning', ' --resume --add-tokens N', SCENARIOS.budgetStop],
  ] as const)(
    'raises one alert for %s: the agent %s (%s), severity %s, with the reason and `starry unlock <agent>%s`',
    async (_, agentState, code, severity, flags, scenario) => {
      const run = await runScenario(h, scenario);
      expect(run.result).toMatchObject({ outcome: 'SUSPENDED', agentState, reason: { code } });

      const event = await oneAlert(run);
      const command = `starry unlock ${run.agentId}${flags}`;
      expect(event).toMatchObject({
        type: 'openstarry.alert',
        kind: 'lockout',
        severity,
        agentId: run.agentId,
        taskId: run.taskId,
        workflowId: run.workflowId,
        agentState,
        reason: run.result.reason,
        command,
      });
      expect(event.action).toContain(`\`${command}\``);
      expect(event.error).toBeUndefined();
    },
  );

  it('raises one alert per lock episode: locked by the loop cap, resumed, locked again — two alerts, two ids', async () => {
    const run = await runScenario(h, { ...SCENARIOS.loopCap, name: 'loop-cap-twice', turns: times(10, LIST) });
    expect(run.result).toMatchObject({ outcome: 'SUSPENDED', reason: { code: 'LOOP_CAP' } });
    await afterAlert(run);
    await h.agents.unlock(run.agentId, { resume: true, note: 'one more allowance' });

    const history = await settledHistory(
      h.agents.client,
      agentWorkflowId(run.agentId),
      (hist) => completedAttempts(hist, 'alert').length === 2,
    );
    expect(completedAttempts(history, 'alert')).toEqual([1, 1]);
    const delivered = postsFor(run.agentId).map((p) => p.body);
    expect(delivered.map((e) => [e.agentState, e.reason.code, e.severity])).toEqual([
      ['SAFETY_LOCKOUT', 'LOOP_CAP', 'warning'],
      ['SAFETY_LOCKOUT', 'LOOP_CAP', 'warning'],
    ]);
    expect(new Set(delivered.map((e) => e.id)).size).toBe(2);
    expect(logFor(run.agentId)).toEqual(delivered);
    // Replaying the agent's history sends nothing more: the alerts are activities it records.
    const reports = await replayAll(h.agents.client, [agentWorkflowId(run.agentId)]);
    expect(reports.map((x) => [x.ok, x.error])).toEqual([[true, undefined]]);
    expect(postsFor(run.agentId)).toHaveLength(2);
  });

  it('raises no alert for a SYSTEM_HALT: a human stopped the agent', async () => {
    const agentId = uniqueId('halted');
    const run = runScenario(
      h,
      { name: 'halted', goal: 'A slow turn, then done.', turns: [{ ...turn(LIST), delayMs: 30_000 }, done()] },
      { agentId },
    );
    await activityRunning(h.agents.client, taskWorkflowId(agentId, 'task-1'), 'llm');
    await h.agents.halt(agentId, { by: 'test operator' });
    expect((await run).result).toMatchObject({
      outcome: 'CANCELLED',
      agentState: 'STOPPED',
      reason: { code: 'SYSTEM_HALT' },
    });

    // The agent has recorded the cancelled task: anything it would raise for it would be scheduled by now.
    await eventually('the agent to record the cancelled task', async () =>
      (await h.agents.status(agentId)).tasks.some((t) => t.outcome === 'CANCELLED') ? true : undefined,
    );
    const history = await settledHistory(h.agents.client, agentWorkflowId(agentId));
    expect(scheduledInputs(history, 'alert')).toEqual([]);
    expect(postsFor(agentId)).toEqual([]);
    expect(logFor(agentId)).toEqual([]);
  });

  it('keeps the agent workflow running, paused, when its alert cannot be delivered', async () => {
    const agentId = uniqueId('broken-sink');
    brokenLogFor.add(agentId);
    const run = await runScenario(h, SCENARIOS.fatalLlm, { agentId });
    expect(run.result).toMatchObject({ outcome: 'FAILED', agentState: 'ERROR_PAUSED' });

    const failedAlert = (history: History) => (history.events ?? []).some((e) => !!e.activityTaskFailedEventAttributes);
    await settledHistory(h.agents.client, agentWorkflowId(run.agentId), failedAlert);
    const described = await h.agents.client.workflow.getHandle(agentWorkflowId(run.agentId)).describe();
    expect(described.status.name).toBe('RUNNING');
    const status = await h.agents.status(agentId);
    expect(status).toMatchObject({ agentState: 'ERROR_PAUSED', reason: { code: 'FATAL' } });
    // A human can still unlock it.
    await expect(h.agents.unlock(agentId, { note: 'credential fixed' })).resolves.toMatchObject({
      unlocked: true,
      agentState: 'WAITING_FOR_EVENT',
    });
  });
});

describe('a call that waits for approval', () => {
  it('raises one alert per waiting call with the approve command, not again when the agent hears of it twice', async () => {
    const agentId = uniqueId('approval-alert');
    const write = (path: string) => ({ name: 'fs.write', args: { path, content: 'x' } });
    const run = runScenario(
      h,
      {
        name: 'approval-alert',
        goal: 'write two files',
        turns: [turn(write('a.md'), write('b.md')), done()],
        config: { tools: { approval: { ask: ['fs.write'] } } },
      },
      { agentId },
    );
    // The agent may not exist yet: the scenario submits as it starts.
    await eventually('two waiting calls', async () =>
      (await h.agents.approvals(agentId).catch(() => undefined))?.approvals.length === 2 ? true : undefined,
    );
    const alerts = await eventually('two approval alerts', async () =>
      postsFor(agentId).length === 2 ? postsFor(agentId).map((p) => p.body) : undefined,
    );
    expect(alerts.map((e) => [e.kind, e.severity, e.agentState, e.reason.code, e.command])).toEqual([
      ['approval', 'warning', 'WAITING_FOR_APPROVAL', 'APPROVAL', `starry approve ${agentId} t1.0`],
      ['approval', 'warning', 'WAITING_FOR_APPROVAL', 'APPROVAL', `starry approve ${agentId} t1.1`],
    ]);
    expect(alerts[0]).toMatchObject({
      taskId: 'task-1',
      workflowId: taskWorkflowId(agentId, 'task-1'),
      reason: { message: expect.stringMatching(/^fs\.write \{"path":"a\.md","content":"x"\} waits for approval/) },
      action: expect.stringContaining(`starry deny ${agentId} t1.0 --reason`),
    });
    await h.agents.decide(agentId, { callId: 't1.0', decision: 'approve' });
    await h.agents.decide(agentId, { callId: 't1.1', decision: 'deny', reason: 'one is enough' });
    expect((await run).result.outcome).toBe('COMPLETED');
    expect(postsFor(agentId)).toHaveLength(2);
    expect(logFor(agentId)).toHaveLength(2);
  });
});
