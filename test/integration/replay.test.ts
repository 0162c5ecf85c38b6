/**
 * Every committed history (test/fixtures/histories/, recorded by test/fixtures/record-histories.ts) is
 * replayed against the current workflow code, so a change that would break running workflows fails
 * here before it lands. Intentional changes go behind `patched()`.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { loadHistoryFile, replayHistory } from '../../dev/replay';

const dir = path.join(__dirname, '..', 'fixtures', 'histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

describe('committed histories', () => {
  it('hold the agent and the task workflow of each representative run, before and after the transcript store, the worker’s tools, the sparse search-attribute counts, the one marker for all of them, and the agent’s writes of what changed only, and nothing else', () => {
    const runs = ['budget-stop', 'eperm', 'fatal-llm', 'frustration-cascade', 'repeat-lockout'];
    const generations = ['', '-store', '-tools', '-counts', '-changes', '-upserts'];
    expect(files).toEqual(runs.flatMap((r) => generations.flatMap((g) => [`${r}${g}-agent.json`, `${r}${g}-task.json`])).sort());
  });

  it.each(files)('%s replays deterministically with the current code', async (file) => {
    const report = await replayHistory(loadHistoryFile(path.join(dir, file)), file);
    expect(report.error).toBeUndefined();
    expect(report.ok).toBe(true);
  });

  it('names the first non-deterministic event when the code no longer matches the history', async () => {
    const history = loadHistoryFile(path.join(dir, 'eperm-task.json'));
    // Pretend the code used to call another activity at this point: the replayer must notice.
    const scheduled = history.events?.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'tool');
    if (!scheduled?.activityTaskScheduledEventAttributes?.activityType) throw new Error('the EPERM history has no tool activity');
    scheduled.activityTaskScheduledEventAttributes.activityType.name = 'toolRenamed';
    const report = await replayHistory(history, 'eperm-task-tampered');
    expect(report.ok).toBe(false);
    expect(report.error).toMatch(/[Nn]ondetermin/);
    expect(report.firstBadEvent).toEqual({ eventId: Number(scheduled.eventId), eventType: 'ACTIVITY_TASK_SCHEDULED' });
  });
});
