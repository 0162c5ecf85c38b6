/**
 * The committed histories (test/fixtures/histories/, recorded by test/fixtures/record-histories.ts) and
 * what they guard (docs/ARCHITECTURE.md#versioning): each replays against the current workflow code,
 * so a change that alters what a workflow does fails here, and ships either as a new Worker Deployment
 * Version with freshly recorded histories or, if it must reach running workflows, behind `patched()`;
 * and the state an agent carries across its continue-as-new, recorded by the code before, starts the
 * current agent, which is how an agent moves to a new version.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import type { AgentWorkflowInput } from '../../workflows/agent';
import { agentWorkflowId } from '../../workflows/messages';
import { loadHistoryFile, replayHistory } from '../../dev/replay';
import { makeWorkspace, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { done, WORKSPACE_FILES } from '../helpers/scenarios';
import { storeFromEnv } from '../../activities/store';

const dir = path.join(__dirname, '..', 'fixtures', 'histories');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'replay' });
});
afterAll(async () => h?.stop());

describe('committed histories', () => {
  it('hold the agent and the task workflow of each representative run (approvals among them), and an agent that continued as new, and nothing else', () => {
    const runs = ['approval', 'budget-stop', 'eperm', 'fatal-llm', 'frustration-cascade', 'repeat-lockout'];
    expect(files).toEqual([...runs.flatMap((r) => [`${r}-agent.json`, `${r}-task.json`]), 'carried-agent.json'].sort());
  });

  it.each(files)('%s replays deterministically with the current code', async (file) => {
    const report = await replayHistory(loadHistoryFile(path.join(dir, file)), file);
    expect(report.error).toBeUndefined();
    expect(report.ok).toBe(true);
  });

  it('names the first non-deterministic event when the code no longer matches the history', async () => {
    const history = loadHistoryFile(path.join(dir, 'eperm-task.json'));
    // Pretend the code used to call another activity at this point: the replayer must notice.
    const scheduled = history.events?.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'tool',
    );
    if (!scheduled?.activityTaskScheduledEventAttributes?.activityType)
      throw new Error('the EPERM history has no tool activity');
    scheduled.activityTaskScheduledEventAttributes.activityType.name = 'toolRenamed';
    const report = await replayHistory(history, 'eperm-task-tampered');
    expect(report.ok).toBe(false);
    expect(report.error).toMatch(/[Nn]ondetermin/);
    expect(report.firstBadEvent).toEqual({ eventId: Number(scheduled.eventId), eventType: 'ACTIVITY_TASK_SCHEDULED' });
  });

  it('says a history of a workflow type this build does not have is not its own, instead of replaying it', async () => {
    const history = loadHistoryFile(path.join(dir, 'eperm-task.json'));
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    if (!started?.workflowType) throw new Error('the EPERM history has no start event');
    started.workflowType.name = 'orderWorkflow';
    const report = await replayHistory(history, 'someone-elses');
    expect(report).toMatchObject({ ok: false, workflowType: 'orderWorkflow' });
    expect(report.error).toBe(
      'the history is of workflow type orderWorkflow, which this build does not have (its workflows: agentWorkflow, taskWorkflow, budgetWorkflow): replay it with the workers of the application that ran it',
    );
  });

  it('start the current agent from the state a recorded agent carried across its continue-as-new, and it resumes the suspended task', async () => {
    const events = loadHistoryFile(path.join(dir, 'carried-agent.json')).events ?? [];
    const handedOn = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.input?.payloads?.[0];
    if (!handedOn) throw new Error('carried-agent.json does not end with a continue-as-new');
    const recorded = defaultPayloadConverter.fromPayload<AgentWorkflowInput>(handedOn);
    expect(recorded.carried).toMatchObject({ agentState: 'SAFETY_LOCKOUT', suspended: { task: { taskId: 'task-1' } } });
    // The recording's agent id, script and workspace were the recording run's: new ones here.
    const agentId = uniqueId('carried');
    // The scripted controller answers by call number: the resumed run's first call is the task's fifth.
    const calls = recorded.carried?.suspended?.checkpoint.callNumber ?? 0;
    const script = writeScript([
      ...Array.from({ length: calls }, () => done('never asked')),
      done('Resumed on the current code.'),
    ]);
    const workspace = makeWorkspace(WORKSPACE_FILES);
    const json = JSON.stringify(recorded)
      .split(recorded.agentId)
      .join(agentId)
      .replace(/"file":"[^"]*turns\.json"/g, JSON.stringify({ file: script }).slice(1, -1))
      .replace(/"workspace":\["[^"]*"\]/g, JSON.stringify({ workspace: [workspace] }).slice(1, -1));
    const input = JSON.parse(json) as AgentWorkflowInput;
    // The transcript its suspended task refers to, as the store of the deployment that ran it holds it.
    const blobs = path.join(dir, 'carried-blobs');
    for (const hash of readdirSync(blobs))
      expect(await storeFromEnv().put(readFileSync(path.join(blobs, hash)))).toBe(hash);
    delete input.continueAsNewAfterEvents;
    await h.agents.client.workflow.start('agentWorkflow', {
      taskQueue: h.taskQueue,
      workflowId: agentWorkflowId(agentId),
      args: [input],
    });

    expect(await h.agents.status(agentId)).toMatchObject({
      agentState: 'SAFETY_LOCKOUT',
      reason: { code: 'REPEATED_FAILURE' },
      suspendedTask: { taskId: 'task-1' },
    });
    await h.agents.unlock(agentId, { resume: true });
    const result = await h.agents.waitForTask(agentId, 'task-1', { after: (r) => r.outcome !== 'SUSPENDED' });
    expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'Resumed on the current code.' });
    // The resumed run continued the recorded transcript: its ticks count on from the suspended ones.
    expect(result.ticks).toBeGreaterThan(recorded.carried?.suspended?.checkpoint.ticks ?? Infinity);
  });
});
