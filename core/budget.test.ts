import {
  ANSWERED_IDS,
  AUDIT_ENTRIES,
  Budget,
  budgetCreateSchema,
  budgetRefFor,
  LeaseHolder,
  newBudgetData,
  type LeaseAnswer,
} from './budget';
import { parseAgentConfig } from './config';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const budget = (tokens: number, more: { leaseTokens?: number; leaseTtlMs?: number } = {}) =>
  new Budget(newBudgetData({ name: 'team-a', tokens, by: 'alice', ...more }, T0));
const granted = (a: LeaseAnswer) => {
  if (!('granted' in a) || !a.granted) throw new Error(`not granted: ${JSON.stringify(a)}`);
  return a;
};

describe('Budget', () => {
  it('grants a lease of its lease size (or what a call needs, if more), and never more than remains', () => {
    const b = budget(25_000);
    expect(granted(b.lease({ holder: 'h1', used: 0, need: 500 }, 'u1', T0)).amount).toBe(10_000);
    expect(granted(b.lease({ holder: 'h2', used: 0, need: 12_000 }, 'u2', T0)).amount).toBe(12_000);
    expect(granted(b.lease({ holder: 'h3', used: 0, need: 500 }, 'u3', T0)).amount).toBe(3_000);
    expect(b.available()).toBe(0);
    expect(b.lease({ holder: 'h4', used: 0, need: 1 }, 'u4', T0)).toMatchObject({
      granted: false,
      message: expect.stringContaining('starry budget raise team-a --tokens N'),
    });
  });

  it('grows a lease that cannot cover the next call, counting what its holder reported as used', () => {
    const b = budget(100_000);
    const first = granted(b.lease({ holder: 'h', used: 0, need: 100 }, 'u1', T0));
    const grown = granted(b.lease({ holder: 'h', leaseId: first.leaseId, used: 9_950, need: 100 }, 'u2', T0));
    expect(grown).toMatchObject({ leaseId: first.leaseId, amount: 20_000, used: 9_950 });
    expect(b.available()).toBe(80_000);
  });

  it('takes back the unused part of a returned lease and counts the rest as spent', () => {
    const b = budget(50_000);
    const l = granted(b.lease({ holder: 'h', used: 0, need: 10 }, 'u1', T0));
    expect(b.lease({ holder: 'h', leaseId: l.leaseId, used: 3_210, release: true }, 'u2', T0)).toEqual({
      returned: 6_790,
      spent: 3_210,
    });
    expect(b.status()).toMatchObject({ limit: 50_000, spent: 3_210, leased: 0, available: 46_790, leases: [] });
  });

  it('answers a request delivered again (same update id) as the first time, granting nothing more', () => {
    const b = budget(50_000);
    const a = b.lease({ holder: 'h', used: 0, need: 10 }, 'u1', T0);
    expect(b.lease({ holder: 'h', used: 0, need: 10 }, 'u1', T0)).toEqual(a);
    expect(b.status().leases).toHaveLength(1);
  });

  it('expires a lease not renewed in time: what its holder reported is spent, the rest returns', () => {
    const b = budget(50_000, { leaseTtlMs: 60_000 });
    const l = granted(b.lease({ holder: 'h', used: 0, need: 10 }, 'u1', T0));
    b.lease({ holder: 'h', leaseId: l.leaseId, used: 400, need: 9_000 }, 'u2', T0 + 1000); // a renewal, reporting 400
    expect(b.nextExpiry()).toBe(T0 + 61_000);
    expect(b.expire(T0 + 60_999)).toBe(0);
    expect(b.expire(T0 + 61_000)).toBe(1);
    expect(b.status()).toMatchObject({ spent: 400, available: 49_600, leases: [] });
    expect(b.status().audit.at(-1)).toMatchObject({ action: 'expire', by: 'h', tokens: 9_600 });
  });

  it('gives a holder back after expiry a new lease, charging what it used of the old one beyond its report', () => {
    const b = budget(50_000, { leaseTtlMs: 60_000 });
    const old = granted(b.lease({ holder: 'h', used: 0, need: 10 }, 'u1', T0));
    b.expire(T0 + 60_000);
    const fresh = granted(b.lease({ holder: 'h', leaseId: old.leaseId, used: 700, need: 10 }, 'u2', T0 + 70_000));
    expect(fresh.leaseId).not.toBe(old.leaseId);
    expect(fresh.used).toBe(0);
    expect(b.status()).toMatchObject({ spent: 700, available: 50_000 - 700 - 10_000 });
  });

  it('raises its limit, recording who did it', () => {
    const b = budget(1_000);
    const s = b.raise({ tokens: 500, by: 'bob', note: 'quarter end' }, T0 + 5);
    expect(s).toMatchObject({ limit: 1_500, available: 1_500 });
    expect(s.audit.map((e) => [e.action, e.by, e.tokens])).toEqual([
      ['create', 'alice', 1_000],
      ['raise', 'bob', 500],
    ]);
    expect(s.audit[1]?.note).toBe('quarter end');
  });

  it('keeps its audit log and its remembered answers bounded, counting what it dropped', () => {
    const b = budget(1e12, { leaseTokens: 1 });
    for (let i = 0; i < 300; i++) b.lease({ holder: `h${i}`, used: 0, need: 1 }, `u${i}`, T0);
    expect(b.data.audit).toHaveLength(AUDIT_ENTRIES);
    expect(b.data.auditDropped).toBe(301 - AUDIT_ENTRIES);
    expect(b.data.answered).toHaveLength(ANSWERED_IDS);
  });

  it('refuses a bad budget: a name with a tenant separator, no tokens, a lease time under a second', () => {
    expect(budgetCreateSchema().safeParse({ name: 'a:b', tokens: 1 }).success).toBe(false);
    expect(budgetCreateSchema().safeParse({ name: 'team-a', tokens: 0 }).success).toBe(false);
    expect(budgetCreateSchema().safeParse({ name: 'team-a', tokens: 5, leaseTtlMs: 10 }).success).toBe(false);
    expect(() => parseAgentConfig({ budget: 'no spaces' }, 'scripted:x.json')).toThrow(/budget/);
  });

  it("names a tenant's agent's budget within its tenant", () => {
    expect(budgetRefFor('acme:x', 'team-a')).toBe('acme:team-a');
    expect(budgetRefFor('x', 'team-a')).toBe('team-a');
  });
});

describe('LeaseHolder', () => {
  const holder = () => new LeaseHolder(LeaseHolder.fresh('team-a'), 'agent-a1-task-1');
  const grant = (amount: number, used = 0): LeaseAnswer => ({
    granted: true,
    leaseId: 'L1',
    amount,
    used,
    expiresAt: T0 + 600_000,
    renewAt: T0 + 300_000,
  });

  it('asks for a lease before its first call, for what the call may send and answer', () => {
    expect(holder().before(1_200, 800, T0)).toEqual({ ask: { holder: 'agent-a1-task-1', used: 0, need: 2_000 } });
  });

  it('calls without a round trip while the lease covers the call and is not due for renewal', () => {
    const h = holder();
    expect(h.answered(grant(10_000), 1_200, 800)).toEqual({ maxOutputTokens: 800 });
    h.charge(1_500);
    expect(h.before(1_200, 800, T0 + 1)).toEqual({ maxOutputTokens: 800 });
    // Due for renewal: it asks, reporting what it used.
    expect(h.before(1_200, 800, T0 + 300_000)).toMatchObject({ ask: { leaseId: 'L1', used: 1_500, need: 2_000 } });
    h.charge(7_000);
    expect(h.before(1_200, 800, T0 + 2)).toMatchObject({ ask: { leaseId: 'L1', used: 8_500 } });
  });

  it('caps the output to what the lease holds beyond the input, and stops when not one token is left', () => {
    const h = holder();
    expect(h.answered(grant(1_500), 1_200, 800)).toEqual({ maxOutputTokens: 300 });
    expect(h.answered(grant(1_500, 300), 1_200, 800)).toMatchObject({
      lock: { agentState: 'STOPPED', reason: { code: 'SHARED_BUDGET_EXHAUSTED' } },
    });
  });

  it('stops on a refusal, with the budget’s message', () => {
    const refused: LeaseAnswer = {
      granted: false,
      message: 'shared budget "team-a" is spent',
      limit: 1,
      spent: 1,
      available: 0,
    };
    expect(holder().answered(refused, 10, 10)).toEqual({
      lock: {
        agentState: 'STOPPED',
        reason: { code: 'SHARED_BUDGET_EXHAUSTED', message: 'shared budget "team-a" is spent' },
      },
    });
  });

  it('returns its lease at the end with what it used, and ids its requests uniquely per run', () => {
    const h = holder();
    expect(h.release()).toBeUndefined();
    h.answered(grant(10_000), 10, 10);
    h.charge(42);
    expect(h.release()).toEqual({ holder: 'agent-a1-task-1', leaseId: 'L1', used: 42, release: true });
    expect([h.nextUpdateId('r1'), h.nextUpdateId('r1')]).toEqual(['lease:r1:1', 'lease:r1:2']);
  });
});
