/**
 * Shared budgets (docs/ARCHITECTURE.md#budget-manager): a named token budget that several agents draw
 * from, held by its own long-lived workflow (`budget-<name>`, workflows/budget.ts). Pure, like
 * `AgentEntity`: `Budget` keeps the books and decides (grant, return, expire, raise), `LeaseHolder` is a
 * task's side of a lease (when to ask, how much output a call may have). The workflows only orchestrate.
 *
 * A lease is tokens set aside for one holder (a task workflow): the holder charges its LLM usage to it
 * locally, asks again only when the lease cannot cover the next call's worst case (or is due for
 * renewal), and returns what it did not use when its task ends. A lease the holder stops renewing
 * expires: what the holder reported so far counts as spent and the rest returns.
 */
import { z } from 'zod';
import { once } from './lazy';
// A budget's name is part of an agent's config (`"budget": "team-a"`), so config.ts defines it.
import { BUDGET_NAME_RULE, budgetNameSchema } from './config-ids';
import { InvalidArgumentError, NotFoundError, RefusedError } from './errors';
import type { LockVerdict } from './safety-monitor';

export { budgetNameSchema };

/** Tokens a lease takes at a time, unless the budget says otherwise or less remains. */
export const DEFAULT_LEASE_TOKENS = 10_000;
/** How long a lease lives without a renewal: a lost worker's lease returns after this. */
export const DEFAULT_LEASE_TTL_MS = 10 * 60_000;
/** Entries of the audit log a budget keeps (the newest); older ones are dropped, counted. */
export const AUDIT_ENTRIES = 100;
/** Lease update ids answered from memory (the newest): a retried request is answered as the first was. */
export const ANSWERED_IDS = 200;
/** Expired leases remembered, so a holder that reports late is charged only what it had not reported. */
export const EXPIRED_LEASES = 100;
/** Outstanding leases at most: one per running task drawing from the budget. */
export const MAX_LEASES = 1_000;

const tokens = (what: string) =>
  z
    .number({ error: `${what} must be a number` })
    .int(`${what} must be a whole number`)
    .min(1, `${what} must be >= 1`)
    .max(1e15, `${what} must be <= 1e15`);
const by = () => z.string().max(200).optional();
const note = () => z.string().max(2000).optional();

/** Create a budget: `starry budget create <name> --tokens N`. */
export const budgetCreateSchema = once(() =>
  z
    .object({
      name: budgetNameSchema(),
      tokens: tokens('tokens'),
      /** Tokens a lease takes at a time (default 10,000). */
      leaseTokens: tokens('leaseTokens').optional(),
      /** How long a lease lives unrenewed, in ms (default 10 minutes; at least 1 s). */
      leaseTtlMs: z
        .number({ error: 'leaseTtlMs must be a number' })
        .int('leaseTtlMs must be a whole number')
        .min(1000, 'leaseTtlMs must be >= 1000')
        .max(86_400_000, 'leaseTtlMs must be <= 86400000 (a day)')
        .optional(),
      by: by(),
      note: note(),
    })
    .strict(),
);
export type BudgetCreate = z.output<ReturnType<typeof budgetCreateSchema>>;

/** Raise a budget's limit by `tokens`. */
export const budgetRaiseSchema = once(() => z.object({ tokens: tokens('tokens'), by: by(), note: note() }).strict());
export type BudgetRaise = z.output<ReturnType<typeof budgetRaiseSchema>>;

/**
 * A holder's request: renew or grow its lease (`need`: the next call's worst case, in tokens), or return
 * it (`release`). `used` is what the holder has charged to `leaseId` so far.
 */
export const leaseRequestSchema = once(() =>
  z
    .object({
      holder: z.string().min(1).max(400),
      leaseId: z.string().max(100).optional(),
      used: z.number().int().min(0),
      need: z.number().int().min(0).optional(),
      release: z.boolean().optional(),
    })
    .strict(),
);
export type LeaseRequest = z.output<ReturnType<typeof leaseRequestSchema>>;

/** The answer to a lease request. */
export type LeaseAnswer =
  | {
      granted: true;
      leaseId: string;
      /** Tokens granted on this lease in all. */
      amount: number;
      /** What the budget counts as used of it (0 for a new lease). */
      used: number;
      expiresAt: number;
      /** Ask again (a renewal) after this, so the lease never expires while the holder works. */
      renewAt: number;
    }
  | { granted: false; message: string; limit: number; spent: number; available: number }
  | { returned: number; spent: number };

/** A budget's state: plain data, carried when its workflow continues as new. */
export interface BudgetData {
  name: string;
  limit: number;
  /** Tokens spent for good: returned and expired leases' use. */
  spent: number;
  leaseTokens: number;
  leaseTtlMs: number;
  leases: Lease[];
  expired: Array<{ id: string; used: number }>;
  audit: BudgetAuditEntry[];
  /** Audit entries dropped (the oldest), beyond `AUDIT_ENTRIES`. */
  auditDropped: number;
  answered: Array<{ id: string; answer: LeaseAnswer }>;
  nextLease: number;
  createdAt: string;
  createdBy: string;
}

/** What `starry budget show` prints and `GET /v1/budgets/{name}` returns (the HTTP API's schema). */
export const budgetStatusSchema = once(() =>
  z.object({
    name: z.string(),
    limit: z.number().int(),
    spent: z.number().int(),
    /** Tokens leased and not yet used (reserved). */
    leased: z.number().int(),
    /** What a new lease can still take: limit − spent − what the leases hold. */
    available: z.number().int(),
    leaseTokens: z.number().int(),
    leaseTtlMs: z.number().int(),
    leases: z.array(
      z.object({
        id: z.string(),
        holder: z.string(),
        amount: z.number().int(),
        used: z.number().int(),
        grantedAt: z.number().int(),
        expiresAt: z.number().int(),
      }),
    ),
    audit: z.array(
      z.object({
        at: z.string(),
        action: z.enum(['create', 'raise', 'lease', 'renew', 'return', 'expire', 'refuse']),
        by: z.string(),
        tokens: z.number().int(),
        leaseId: z.string().optional(),
        note: z.string().optional(),
      }),
    ),
    auditDropped: z.number().int(),
    createdAt: z.string(),
    createdBy: z.string(),
  }),
);
export type BudgetStatus = z.output<ReturnType<typeof budgetStatusSchema>>;
/** A lease as the budget keeps it: `used` is what its holder reported so far. */
export type Lease = BudgetStatus['leases'][number];
/** One change of a budget, with who made it. */
export type BudgetAuditEntry = BudgetStatus['audit'][number];

/**
 * A new budget's state.
 *
 * ```ts
 * newBudgetData({ name: 'team-a', tokens: 1_000_000, by: 'alice' }, Date.now())
 * ```
 */
export function newBudgetData(input: BudgetCreate, now: number): BudgetData {
  const at = new Date(now).toISOString();
  const who = input.by ?? 'unknown';
  return {
    name: input.name,
    limit: input.tokens,
    spent: 0,
    leaseTokens: input.leaseTokens ?? DEFAULT_LEASE_TOKENS,
    leaseTtlMs: input.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    leases: [],
    expired: [],
    audit: [
      {
        at,
        action: 'create',
        by: who,
        tokens: input.tokens,
        ...(input.note !== undefined ? { note: input.note } : {}),
      },
    ],
    auditDropped: 0,
    answered: [],
    nextLease: 1,
    createdAt: at,
    createdBy: who,
  };
}

/**
 * A shared budget's books and decisions.
 *
 * ```ts
 * const b = new Budget(newBudgetData({ name: 'team-a', tokens: 50_000 }, now));
 * const a = b.lease({ holder: 'agent-a1-task-1', used: 0, need: 9_000 }, 'u1', now); // 10,000 granted
 * b.lease({ holder: 'agent-a1-task-1', leaseId: a.leaseId, used: 4_000, release: true }, 'u2', now); // 6,000 back
 * ```
 */
export class Budget {
  constructor(readonly data: BudgetData) {}

  /** What a lease still can take: the limit less what was spent and what the leases hold. */
  available(): number {
    const d = this.data;
    return Math.max(0, d.limit - d.spent - d.leases.reduce((sum, l) => sum + Math.max(l.amount, l.used), 0));
  }

  /** The answer already given to this update id (a request delivered again), if any. */
  answered(updateId: string | undefined): LeaseAnswer | undefined {
    return updateId === undefined ? undefined : this.data.answered.find((a) => a.id === updateId)?.answer;
  }

  /**
   * Take a holder's request: return its lease (`release`), or renew it and grow it to cover `need`
   * (by at least the budget's lease size, or what remains); refused when nothing remains. A holder whose
   * lease expired gets a new one; what it used of the old one beyond what it had reported is charged.
   */
  lease(req: LeaseRequest, updateId: string | undefined, now: number): LeaseAnswer {
    const again = this.answered(updateId);
    if (again) return again;
    const answer = this.decide(req, now);
    if (updateId !== undefined) {
      this.data.answered.push({ id: updateId, answer });
      this.data.answered.splice(0, Math.max(0, this.data.answered.length - ANSWERED_IDS));
    }
    return answer;
  }

  private decide(req: LeaseRequest, now: number): LeaseAnswer {
    const d = this.data;
    let lease = req.leaseId !== undefined ? d.leases.find((l) => l.id === req.leaseId) : undefined;
    if (req.leaseId !== undefined && !lease) this.late(req.leaseId, req.used);
    if (lease) lease.used = Math.max(lease.used, req.used);
    if (req.release) {
      if (!lease) return { returned: 0, spent: d.spent };
      d.leases = d.leases.filter((l) => l !== lease);
      d.spent += lease.used;
      const returned = Math.max(0, lease.amount - lease.used);
      this.audit(now, 'return', req.holder, returned, lease.id);
      return { returned, spent: d.spent };
    }
    const need = req.need ?? 0;
    const room = lease ? lease.amount - lease.used : 0;
    const available = this.available();
    const more = room >= need ? 0 : Math.min(available, Math.max(need - room, d.leaseTokens));
    if (!lease && more <= 0) return this.refused(req.holder, now);
    if (lease && room + more <= 0) return this.refused(req.holder, now);
    if (!lease) {
      if (d.leases.length >= MAX_LEASES)
        throw new RefusedError(
          `budget ${d.name} has ${MAX_LEASES} leases out, the most it holds: wait for tasks to end, or use another budget`,
        );
      lease = { id: `L${d.nextLease++}`, holder: req.holder, amount: 0, used: 0, grantedAt: now, expiresAt: now };
      d.leases.push(lease);
    }
    lease.amount += more;
    lease.expiresAt = now + d.leaseTtlMs;
    this.audit(now, more > 0 ? 'lease' : 'renew', req.holder, more, lease.id);
    return {
      granted: true,
      leaseId: lease.id,
      amount: lease.amount,
      used: lease.used,
      expiresAt: lease.expiresAt,
      renewAt: now + Math.floor(d.leaseTtlMs / 2),
    };
  }

  /** A holder reports on a lease that expired: what it used beyond what it had reported is spent too. */
  private late(leaseId: string, used: number): void {
    const gone = this.data.expired.find((e) => e.id === leaseId);
    if (!gone || used <= gone.used) return;
    this.data.spent += used - gone.used;
    gone.used = used;
  }

  private refused(holder: string, now: number): LeaseAnswer {
    const d = this.data;
    this.audit(now, 'refuse', holder, 0);
    return {
      granted: false,
      message: exhaustedMessage(d.name, d.limit, d.limit - this.available()),
      limit: d.limit,
      spent: d.spent,
      available: this.available(),
    };
  }

  /**
   * End the leases whose time ran out: what their holders reported counts as spent, the rest returns.
   * Returns how many ended.
   */
  expire(now: number): number {
    const d = this.data;
    const ended = d.leases.filter((l) => l.expiresAt <= now);
    if (!ended.length) return 0;
    d.leases = d.leases.filter((l) => l.expiresAt > now);
    for (const l of ended) {
      d.spent += l.used;
      d.expired.push({ id: l.id, used: l.used });
      this.audit(now, 'expire', l.holder, Math.max(0, l.amount - l.used), l.id);
    }
    d.expired.splice(0, Math.max(0, d.expired.length - EXPIRED_LEASES));
    return ended.length;
  }

  /** When the next lease expires (for the workflow's timer), or undefined when none is out. */
  nextExpiry(): number | undefined {
    return this.data.leases.length ? Math.min(...this.data.leases.map((l) => l.expiresAt)) : undefined;
  }

  /** Raise the limit by `tokens`, recorded with who did it. */
  raise(input: BudgetRaise, now: number): BudgetStatus {
    this.data.limit += input.tokens;
    this.audit(now, 'raise', input.by ?? 'unknown', input.tokens, undefined, input.note);
    return this.status();
  }

  /** The budget as `show` prints it. */
  status(): BudgetStatus {
    const d = this.data;
    return {
      name: d.name,
      limit: d.limit,
      spent: d.spent,
      leased: d.leases.reduce((sum, l) => sum + Math.max(0, l.amount - l.used), 0),
      available: this.available(),
      leaseTokens: d.leaseTokens,
      leaseTtlMs: d.leaseTtlMs,
      leases: d.leases.map((l) => ({ ...l })),
      audit: [...d.audit],
      auditDropped: d.auditDropped,
      createdAt: d.createdAt,
      createdBy: d.createdBy,
    };
  }

  private audit(
    now: number,
    action: BudgetAuditEntry['action'],
    who: string,
    tokens: number,
    leaseId?: string,
    why?: string,
  ): void {
    const d = this.data;
    d.audit.push({
      at: new Date(now).toISOString(),
      action,
      by: who,
      tokens,
      ...(leaseId !== undefined ? { leaseId } : {}),
      ...(why !== undefined ? { note: why } : {}),
    });
    const over = d.audit.length - AUDIT_ENTRIES;
    if (over > 0) {
      d.audit.splice(0, over);
      d.auditDropped += over;
    }
  }
}

/** What a task says when its budget is spent: which budget, and how to raise it. */
export function exhaustedMessage(name: string, limit: number, committed: number): string {
  return (
    `shared budget "${name}" is spent (${committed} of ${limit} tokens spent or leased): ` +
    `\`starry budget raise ${name} --tokens N\` adds N tokens (an admin's act), then \`starry unlock <agent> --resume\` continues the task`
  );
}

/** The lock a refused lease puts the agent in: STOPPED, SHARED_BUDGET_EXHAUSTED. */
export function sharedBudgetLock(message: string): LockVerdict {
  return { agentState: 'STOPPED', reason: { code: 'SHARED_BUDGET_EXHAUSTED', message } };
}

/** A task's lease, as it holds it (carried when the task continues as new). */
export interface HeldLease {
  /** The budget's full name (`<tenant>:<name>` for a tenant's). */
  budget: string;
  leaseId?: string;
  amount: number;
  used: number;
  renewAt: number;
  /** Requests sent, for their update ids. */
  seq: number;
}

/** What the task does before an LLM call: ask the budget first, or call with this output cap. */
export type LeaseStep = { ask: LeaseRequest } | { maxOutputTokens: number } | { lock: LockVerdict };

/**
 * A task's side of a lease: it asks only when the lease cannot cover the next call's worst case or is
 * due for renewal, so most ticks cost no round trip.
 *
 * ```ts
 * const lease = new LeaseHolder(input.lease ?? LeaseHolder.fresh('team-a'), workflowId);
 * const step = lease.before(inputEstimate, maxOutputTokens, Date.now());
 * ```
 */
export class LeaseHolder {
  constructor(
    readonly data: HeldLease,
    readonly holder: string,
  ) {}

  /** A task that holds no lease yet. */
  static fresh(budget: string): HeldLease {
    return { budget, amount: 0, used: 0, renewAt: 0, seq: 0 };
  }

  /** Tokens the lease still covers. */
  room(): number {
    return this.data.amount - this.data.used;
  }

  /**
   * Before a call that may send `input` tokens and answer `maxOutput`: within the lease (and not due
   * for renewal), the call goes with `maxOutput`; otherwise the budget is asked first.
   */
  before(input: number, maxOutput: number, now: number): LeaseStep {
    const d = this.data;
    if (d.leaseId !== undefined && this.room() >= input + maxOutput && now < d.renewAt)
      return { maxOutputTokens: maxOutput };
    return {
      ask: {
        holder: this.holder,
        ...(d.leaseId !== undefined ? { leaseId: d.leaseId } : {}),
        used: d.used,
        need: input + maxOutput,
      },
    };
  }

  /**
   * The budget answered: the call goes with its output capped to what the lease holds beyond the input,
   * or the task stops (refused, or what was granted does not cover even one output token).
   */
  answered(answer: LeaseAnswer, input: number, maxOutput: number): LeaseStep {
    if ('returned' in answer) throw new Error('a lease request answered as a return');
    if (!answer.granted) return { lock: sharedBudgetLock(answer.message) };
    const d = this.data;
    d.leaseId = answer.leaseId;
    d.amount = answer.amount;
    d.used = answer.used;
    d.renewAt = answer.renewAt;
    const cap = Math.min(maxOutput, this.room() - input);
    if (cap < 1)
      return {
        lock: sharedBudgetLock(
          `shared budget "${displayName(d.budget)}" has too little left for the next call (it may send about ${input} tokens; the lease holds ${this.room()}): ` +
            `\`starry budget raise ${displayName(d.budget)} --tokens N\` adds N tokens (an admin's act), then \`starry unlock <agent> --resume\` continues the task`,
        ),
      };
    return { maxOutputTokens: cap };
  }

  /** A call's usage, charged to the lease here; the budget hears of it at the next request or the return. */
  charge(tokens: number): void {
    this.data.used += tokens;
  }

  /** The request that returns the lease at the task's end; undefined when it holds none. */
  release(): LeaseRequest | undefined {
    const d = this.data;
    if (d.leaseId === undefined) return undefined;
    return { holder: this.holder, leaseId: d.leaseId, used: d.used, release: true };
  }

  /** The update id of the next request: unique per run and request, the same on replay and on retry. */
  nextUpdateId(runId: string): string {
    return `lease:${runId}:${++this.data.seq}`;
  }

  /** The lease was returned: the task holds none now. */
  returned(): void {
    const d = this.data;
    delete d.leaseId;
    d.amount = 0;
    d.used = 0;
  }
}

/** A budget's name without its tenant, as its users know it. */
function displayName(ref: string): string {
  return ref.slice(ref.indexOf(':') + 1);
}

/**
 * The budget workflow's id for a budget's full name.
 *
 * ```ts
 * budgetWorkflowId('acme:team-a') // 'budget-acme:team-a'
 * ```
 */
export function budgetWorkflowId(ref: string): string {
  return `budget-${ref}`;
}

/**
 * The full name of the budget an agent's config names: a tenant's agent draws from its tenant's budget
 * of that name, so no tenant reaches another's.
 *
 * ```ts
 * budgetRefFor('acme:x', 'team-a') // 'acme:team-a'
 * ```
 */
export function budgetRefFor(agentId: string, name: string): string {
  const at = agentId.indexOf(':');
  return at < 0 ? name : `${agentId.slice(0, at)}:${name}`;
}

/** A budget name checked at the edge: a clear error for a bad one. */
export function checkBudgetName(name: string): string {
  const parsed = budgetNameSchema().safeParse(name);
  if (!parsed.success) throw new InvalidArgumentError(`invalid budget name "${name}": ${BUDGET_NAME_RULE}`);
  return parsed.data;
}

/** The error for a budget that does not exist. */
export function noBudget(name: string): NotFoundError {
  return new NotFoundError(
    `no budget "${name}": create it with \`starry budget create ${name} --tokens N\` (or POST /v1/budgets), or name an existing one (\`starry budget list\`)`,
  );
}
