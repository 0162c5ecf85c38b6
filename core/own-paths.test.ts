import { ownPathsRefusal, rootConflicts, type OwnPath } from './own-paths';

const CODE: OwnPath = { path: '/app', what: "the worker's code and packages", rootsMayLieIn: '/app/workspaces' };
const STORE: OwnPath = { path: '/var/starry/blobs', what: 'the transcript store' };
const POLICY: OwnPath = { path: '/etc/starry/policy.json', what: 'its policy (STARRY_WORKER_POLICY)' };

describe("the worker's own paths and its roots", () => {
  it('refuses a root that contains something of the worker’s, or lies inside it', () => {
    expect(rootConflicts(['/'], [CODE]).map((c) => c.how)).toEqual(['contains']);
    expect(rootConflicts(['/app'], [CODE]).map((c) => c.how)).toEqual(['contains']);
    expect(rootConflicts(['/var/starry'], [STORE])).toEqual([{ root: '/var/starry', own: STORE, how: 'contains' }]);
    expect(rootConflicts(['/app/lib'], [CODE])).toEqual([{ root: '/app/lib', own: CODE, how: 'lies inside' }]);
    expect(rootConflicts(['/etc/starry'], [POLICY]).map((c) => c.how)).toEqual(['contains']);
  });

  it("lets roots lie in the package's own workspaces folder, and anywhere apart", () => {
    expect(rootConflicts(['/app/workspaces', '/app/workspaces/a1', '/srv/ws'], [CODE, STORE, POLICY])).toEqual([]);
    // A sibling that shares the folder's prefix is not in it.
    expect(rootConflicts(['/app/workspaces-old'], [CODE]).map((c) => c.how)).toEqual(['lies inside']);
    expect(rootConflicts(['/var/starry/blobs-2'], [STORE])).toEqual([]);
  });

  it('names each overlap, why it matters and what to do, for the setting the roots came from', () => {
    const message = ownPathsRefusal(rootConflicts(['/app', '/var'], [CODE, STORE]), 'STARRY_WORKSPACE_ROOTS');
    expect(message).toBe(
      "this worker's workspace roots (STARRY_WORKSPACE_ROOTS) overlap what the worker itself loads, runs or keeps, so a task " +
        'could write code the worker then runs outside the sandbox, or read its secrets and transcripts:\n' +
        "  - /app contains the worker's code and packages (/app)\n" +
        '  - /var contains the transcript store (/var/starry/blobs)\n' +
        'Give tasks a folder that holds none of these (e.g. mkdir -p /srv/workspaces and set STARRY_WORKSPACE_ROOTS to ' +
        '/srv/workspaces), or move the store, the journal or the file out of the roots; then start the worker again.',
    );
    expect(ownPathsRefusal([], 'the default')).toBeUndefined();
    expect(ownPathsRefusal(rootConflicts(['/app'], [CODE]), 'STARRY_WORKER_POLICY')).toContain(
      'set the roots of STARRY_WORKER_POLICY to /srv/workspaces',
    );
  });
});
