/**
 * The hook points' composition (workflows/task/hooks.ts): the order hooks run in, how `around` hooks
 * nest, which end wins, and what options and carried state add up to. The composer itself touches no
 * workflow API, so it runs here without a worker; each concern's module is covered end to end by the
 * integration test of its behaviour (docs/ARCHITECTURE.md, "The loop and its hooks").
 */
import type { ActivityOptions } from '@temporalio/workflow';
import type { TaskEnd } from '../../core/task-run';
import { Hooks, type TaskHook } from './hooks';
import type { TaskScope } from './scope';

// The composer passes the scope through untouched: any value stands for it here.
const scope = {} as TaskScope;
const end = (reason: string) => ({ outcome: 'STOPPED', reason }) as unknown as TaskEnd;

describe('Hooks', () => {
  it('wraps an activity call in the listed order, the first hook outermost, hooks without the point skipped', async () => {
    const seen: string[] = [];
    const around = (name: string): TaskHook => ({
      name,
      async activity(_t, what, call) {
        seen.push(`${name} before ${what}`);
        const out = await call();
        seen.push(`${name} after`);
        return out;
      },
    });
    const hooks = new Hooks([around('outer'), { name: 'no-op' }, around('inner')]);

    const out = await hooks.activity(scope, 'llm · tick 1', async () => {
      seen.push('call');
      return 42;
    });

    expect(out).toBe(42);
    expect(seen).toEqual([
      'outer before llm · tick 1',
      'inner before llm · tick 1',
      'call',
      'inner after',
      'outer after',
    ]);
  });

  it('lets an around hook run the call again (as the worker-loss hook does)', async () => {
    let calls = 0;
    const rerun: TaskHook = {
      name: 'rerun',
      activity: (_t, _what, call) => call().catch(() => call()),
    };
    const out = await new Hooks([rerun]).activity(scope, 'tool', async () => {
      calls += 1;
      if (calls === 1) throw new Error('worker lost');
      return 'done';
    });
    expect({ out, calls }).toEqual({ out: 'done', calls: 2 });
  });

  it('stops at the first hook that ends the task before the LLM call: later hooks are not asked', async () => {
    const asked: string[] = [];
    const hook = (name: string, ends?: TaskEnd): TaskHook => ({
      name,
      async beforeLlmCall() {
        asked.push(name);
        return ends;
      },
    });
    const refused = end('SHARED_BUDGET_EXHAUSTED');
    const hooks = new Hooks([hook('first'), hook('budget', refused), hook('after')]);

    await expect(hooks.beforeLlmCall(scope, {} as never)).resolves.toBe(refused);
    expect(asked).toEqual(['first', 'budget']);
    await expect(new Hooks([hook('only')]).beforeLlmCall(scope, {} as never)).resolves.toBeUndefined();
  });

  it('chains tool options through every hook in order', () => {
    const hooks = new Hooks([
      { name: 'queue', toolOptions: (_t, o) => ({ ...o, taskQueue: 'tools' }) },
      { name: 'none' },
      { name: 'wait', toolOptions: (_t, o, listing) => ({ ...o, scheduleToStartTimeout: listing ? '10s' : '1m' }) },
    ]);
    const base: ActivityOptions = { startToCloseTimeout: '30s' };

    expect(hooks.toolOptions(scope, base)).toEqual({
      startToCloseTimeout: '30s',
      taskQueue: 'tools',
      scheduleToStartTimeout: '1m',
    });
    expect(hooks.toolOptions(scope, base, true)).toMatchObject({ scheduleToStartTimeout: '10s' });
    expect(base).toEqual({ startToCloseTimeout: '30s' });
  });

  it('takes the first hook that knows what a tool failure means, none when none does', () => {
    const facts = { error: { code: 'E_UNAVAILABLE' } as never, retriesExhausted: false };
    const hooks = new Hooks([
      { name: 'silent', toolFailure: () => undefined },
      { name: 'queue', toolFailure: () => facts },
      { name: 'later', toolFailure: () => ({ error: { code: 'E_OTHER' } as never, retriesExhausted: true }) },
    ]);
    expect(hooks.toolFailure(scope, new Error('x'), 'fs.read')).toBe(facts);
    expect(new Hooks([{ name: 'silent' }]).toolFailure(scope, new Error('x'), 'fs.read')).toBeUndefined();
  });

  it('merges what each hook carries into the next run', () => {
    const hooks = new Hooks([
      { name: 'lease', carried: () => ({ lease: { budget: 'team' } as never }) },
      { name: 'none' },
      { name: 'queue', carried: () => ({ toolTaskQueue: 'tools' }) },
    ]);
    expect(hooks.carried(scope)).toEqual({ lease: { budget: 'team' }, toolTaskQueue: 'tools' });
  });

  it('passes the tool list through each hook, a hook that returns nothing leaving it as it was', async () => {
    const listed = { specs: [] } as never;
    const fromToolWorker = { specs: [{ name: 'fs.read' }] } as never;
    const hooks = new Hooks([
      { name: 'keeps', toolsListed: async () => undefined },
      { name: 'replaces', toolsListed: async () => fromToolWorker },
    ]);
    await expect(hooks.toolsListed(scope, listed, {} as never)).resolves.toBe(fromToolWorker);
    await expect(new Hooks([]).toolsListed(scope, listed, {} as never)).resolves.toBe(listed);
  });

  it('calls the plain points of every hook in order, awaiting each before the next', async () => {
    const seen: string[] = [];
    const hook = (name: string): TaskHook => ({
      name,
      beforeTick: async () => {
        await Promise.resolve();
        seen.push(`${name}.beforeTick`);
      },
      spent: (_t, usage) => seen.push(`${name}.spent ${usage.inputTokens}`),
      tickEnded: () => seen.push(`${name}.tickEnded`),
      ending: () => seen.push(`${name}.ending`),
      ended: async () => {
        seen.push(`${name}.ended`);
      },
    });
    const hooks = new Hooks([hook('a'), hook('b')]);

    await hooks.beforeTick(scope);
    hooks.spent(scope, { inputTokens: 7, outputTokens: 1 } as never);
    hooks.tickEnded(scope);
    hooks.ending(scope, end('DONE'));
    await hooks.ended(scope);

    expect(seen).toEqual([
      'a.beforeTick',
      'b.beforeTick',
      'a.spent 7',
      'b.spent 7',
      'a.tickEnded',
      'b.tickEnded',
      'a.ending',
      'b.ending',
      'a.ended',
      'b.ended',
    ]);
  });
});
