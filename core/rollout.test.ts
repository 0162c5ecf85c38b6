import {
  checkPromotion,
  formatVersions,
  gateRefusal,
  parseRamp,
  parseRecent,
  versionQuery,
  versionStatus,
  type VersionRow,
} from './rollout';

const row = (buildId: string, status: VersionRow['status'], pollers = 1, open = [0, 0, 0]): VersionRow => ({
  buildId,
  status,
  pollers,
  open: { agentWorkflow: open[0] ?? 0, taskWorkflow: open[1] ?? 0, budgetWorkflow: open[2] ?? 0 },
});

describe('versionStatus', () => {
  it('names the server enum, by number or by name', () => {
    expect([1, 2, 3, 4, 5, 6, 0].map(versionStatus)).toEqual([
      'inactive',
      'current',
      'ramping',
      'draining',
      'drained',
      'created',
      'unknown',
    ]);
    expect(versionStatus('WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING')).toBe('draining');
    expect(versionStatus('nonsense')).toBe('unknown');
  });
});

describe('versionQuery', () => {
  it('selects one version and type by the deployment version search attribute, open ones when asked', () => {
    expect(versionQuery('openstarry', '0.1.0-abc', 'taskWorkflow', true)).toBe(
      "TemporalWorkerDeploymentVersion = 'openstarry:0.1.0-abc' AND WorkflowType = 'taskWorkflow' AND ExecutionStatus = 'Running'",
    );
    expect(versionQuery('dep', 'b', 'agentWorkflow', false)).not.toContain('ExecutionStatus');
  });

  it('escapes a quote, so a name cannot end the string', () => {
    expect(versionQuery("de'p", 'b', 'agentWorkflow', false)).toContain("'de\\'p:b'");
  });
});

describe('parseRamp and parseRecent', () => {
  it('take a percentage from 0 to 100', () => {
    expect([parseRamp('0'), parseRamp('25'), parseRamp('100'), parseRamp('12.5')]).toEqual([0, 25, 100, 12.5]);
    for (const bad of ['101', '-1', 'ten', '', '1e2'])
      expect(parseRamp(bad)).toEqual({ error: expect.stringContaining('--ramp must be a percentage from 0 to 100') });
  });

  it('take a whole number of histories from 1 to 1000', () => {
    expect(parseRecent('10')).toBe(10);
    for (const bad of ['0', '1001', '2.5', 'x'])
      expect(parseRecent(bad)).toEqual({ error: expect.stringContaining('--recent must be a whole number') });
  });
});

describe('checkPromotion', () => {
  const versions = [row('b', 'inactive'), row('a', 'current', 1, [3, 1, 0])];
  const ask = { deployment: 'dep', localBuildId: 'b' };

  it("lets this checkout's served build go on to its gate, against the current version", () => {
    expect(checkPromotion(ask, versions)).toEqual({ ok: true, target: versions[0], current: versions[1] });
    expect(checkPromotion({ ...ask, buildId: 'b', ramp: 20 }, versions)).toMatchObject({ ok: true });
  });

  it('has no gate to pass for a first version: nothing current recorded a history', () => {
    expect(checkPromotion(ask, [row('b', 'inactive')])).toEqual({ ok: true, target: row('b', 'inactive') });
  });

  it('refuses a build id the deployment does not have, naming the ones it has', () => {
    expect(checkPromotion({ ...ask, buildId: 'zz' }, versions)).toEqual({
      ok: false,
      reason: expect.stringContaining('deployment dep has no version zz (its versions: b, a)'),
    });
  });

  it("refuses another checkout's build: the gate can only replay on the code at hand", () => {
    expect(checkPromotion({ ...ask, buildId: 'a', ramp: 10 }, [row('a', 'inactive'), row('b', 'current')])).toEqual({
      ok: false,
      reason: expect.stringContaining("a is not this checkout's build (b)"),
    });
  });

  it('refuses a version nobody polls, and one that is current already', () => {
    expect(checkPromotion(ask, [row('b', 'inactive', 0), row('a', 'current')])).toEqual({
      ok: false,
      reason: expect.stringContaining('version b has no worker polling'),
    });
    expect(checkPromotion(ask, [row('b', 'current')])).toEqual({
      ok: false,
      reason: 'b is already the current version of deployment dep',
    });
  });
});

describe('gateRefusal', () => {
  it('names each history and its first bad event, and says the routing is unchanged', () => {
    const text = gateRefusal('b', 'a', [
      { workflowId: 'agent-x-task-1', runId: 'r1', firstBadEvent: { eventId: 5, eventType: 'MARKER_RECORDED' } },
      { workflowId: 'agent-y-task-2', runId: 'r2' },
    ]);
    expect(text).toContain('promotion of b refused: 2 histories of the current version a do not replay on its code');
    expect(text).toContain('agent-x-task-1 run r1 at event #5 MARKER_RECORDED; agent-y-task-2 run r2)');
    expect(text).toContain('The routing is unchanged');
  });
});

describe('formatVersions', () => {
  it('lists each version with its status, pollers and open workflows, and which workers may stop', () => {
    const text = formatVersions('dep', [
      { ...row('b', 'ramping', 2, [1, 0, 0]), rampPercentage: 25 },
      row('a', 'current', 1, [4, 2, 1]),
      row('z', 'drained', 1),
    ]);
    const lines = text.split('\n');
    expect(lines[1]).toMatch(/^BUILD ID\s+STATUS\s+POLLERS\s+AGENTS\s+TASKS\s+BUDGETS$/);
    expect(lines[2]).toMatch(/^b\s+ramping 25%\s+2\s+1\s+0\s+0$/);
    expect(lines[3]).toMatch(/^a\s+current\s+1\s+4\s+2\s+1$/);
    expect(text).toContain('nothing runs on z: its workers may stop');
  });

  it('says how a version appears when there is none', () => {
    expect(formatVersions('dep', [])).toContain('deployment dep has no versions yet');
  });
});
