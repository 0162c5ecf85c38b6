/**
 * Tool workers are not versioned (docs/ARCHITECTURE.md#versioning): a task pinned to one build of the
 * workflows sends its tool calls to whichever tool worker polls the tool queue, of any build. The rule
 * that makes that safe is pinned here: a tool worker keeps serving the activities and inputs that
 * earlier builds' workflows send. The committed histories (test/fixtures/histories) were recorded by
 * an earlier build; every tool activity they scheduled is run on this build's tool worker, which must
 * answer as the tool worker of that build did.
 */
import { promises as fs, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createToolWorkerActivities } from './index';
import { createPresenceActivities } from './tool-presence';
import { localDirStore } from './store/local';
import { makeWorkspace, testPolicy, type TempWorkspace } from './tools/test-support';

const HISTORIES = path.join(__dirname, '..', 'test', 'fixtures', 'histories');

/** The activities a workflow of any build schedules on the tool queue: renaming or dropping one strands those builds' tasks. */
const TOOL_QUEUE_ACTIVITIES = ['checkTaskLimits', 'listTools', 'tool'];

interface Recorded {
  history: string;
  type: string;
  input: Record<string, unknown>;
  /** `ok`, or the failure's type (the error code) the tool worker of the recording build answered. */
  outcome: string;
}

/** As `temporal workflow show --output json` writes it: payload data in base64 JSON. */
type Attrs = { activityType?: { name: string }; input?: { payloads: { data: string }[] } };
type Event = {
  eventId: string;
  activityTaskScheduledEventAttributes?: Attrs;
  activityTaskCompletedEventAttributes?: { scheduledEventId: string };
  activityTaskFailedEventAttributes?: {
    scheduledEventId: string;
    failure?: { applicationFailureInfo?: { type?: string } };
  };
};

/** Every tool-queue activity the committed histories scheduled, with what it answered then. */
function recordedCalls(): Recorded[] {
  const out: Recorded[] = [];
  for (const file of readdirSync(HISTORIES).filter((f) => f.endsWith('.json'))) {
    const events = (JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8')) as { events: Event[] }).events;
    const scheduled = new Map<string, Recorded>();
    for (const e of events) {
      const s = e.activityTaskScheduledEventAttributes;
      const type = s?.activityType?.name ?? '';
      if (s && TOOL_QUEUE_ACTIVITIES.includes(type)) {
        const input = JSON.parse(Buffer.from(s.input!.payloads[0]!.data, 'base64').toString('utf8')) as Record<
          string,
          unknown
        >;
        scheduled.set(e.eventId, { history: file, type, input, outcome: '' });
      }
      const done = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
      const call = done && scheduled.get(String(done.scheduledEventId));
      if (call) {
        call.outcome = e.activityTaskFailedEventAttributes?.failure?.applicationFailureInfo?.type ?? 'ok';
        out.push(call);
      }
    }
  }
  return out;
}

/**
 * What this build's tool worker answers `call`, its paths moved to `ws` (the recording machine's are
 * gone): the workspace, holding the scenarios' `notes.md` (test/helpers/scenarios.ts), and a scripted
 * model's file, which the tool half of the submit check reads.
 */
async function answer(ws: TempWorkspace, call: Recorded): Promise<string> {
  await fs.writeFile(path.join(ws.root, 'notes.md'), '# Notes\n');
  const script = path.join(ws.base, 'turns.json');
  await fs.writeFile(script, '[]');
  const activities = createToolWorkerActivities({
    policy: testPolicy(ws),
    store: localDirStore(path.join(ws.base, 'store')),
  });
  const llm = call.input.llm as { file?: string } | undefined;
  const input = { ...call.input, workspace: [ws.root], ...(llm?.file ? { llm: { ...llm, file: script } } : {}) };
  const run = activities[call.type as 'tool'] as unknown as (i: unknown) => Promise<{ refused?: string }>;
  const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
  try {
    const result = (await env.run(run, input)) as { refused?: string };
    return result.refused ? `refused: ${result.refused}` : 'ok';
  } catch (err) {
    return err instanceof ApplicationFailure ? (err.type ?? 'failed') : String(err);
  }
}

describe('tool workers are unversioned: this build serves what earlier builds send', () => {
  let ws: TempWorkspace;
  beforeEach(async () => {
    ws = await makeWorkspace();
  });
  afterEach(() => ws.cleanup());

  it('serves every activity a workflow schedules on the tool queue, and the presence probe', () => {
    const names = Object.keys(createToolWorkerActivities({ policy: testPolicy(ws) }));
    expect(names).toEqual(expect.arrayContaining(TOOL_QUEUE_ACTIVITIES));
    expect(Object.keys(createPresenceActivities('here'))).toEqual(['toolWorkerPresent']);
  });

  it('answers the tool calls and submit checks the committed histories recorded as the recording build did', async () => {
    const calls = recordedCalls();
    expect(calls.filter((c) => c.type === 'tool').length).toBeGreaterThanOrEqual(10);
    expect(calls.filter((c) => c.type === 'checkTaskLimits').length).toBeGreaterThanOrEqual(5);
    const answers = [];
    for (const call of calls) answers.push({ history: call.history, type: call.type, outcome: await answer(ws, call) });
    expect(answers).toEqual(calls.map(({ history, type, outcome }) => ({ history, type, outcome })));
  });
});
