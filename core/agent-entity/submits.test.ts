import { parseAgentConfig } from '../config';
import { RefusedError } from '../errors';
import { LIMITS, SUBMIT_EXPIRED } from '../payloads';
import { answeredSubmit, parseSubmit, refuseLate, refuseOversize, rememberSubmit, type SubmitsData } from './submits';

const llm = parseAgentConfig({}, 'scripted:x.json').llm;

describe('agent submits: the door of its tasks', () => {
  it('parses a raw submit once, filling a partial config with the agent’s llm and keeping only the limits it gives', () => {
    const parsed = parseSubmit({ goal: 'g', priority: 2, taskId: 'task-t', config: { safety: { maxTicks: 3 } } }, llm);
    expect(parsed).toMatchObject({ goal: 'g', priority: 2, taskId: 'task-t' });
    expect(parsed.config?.llm).toEqual({ provider: 'scripted', file: 'x.json' });
    expect(parsed.config?.safety).toEqual({ maxTicks: 3 });
    expect(Object.keys(parseSubmit({ goal: 'g' }, llm))).toEqual(['goal']);
    expect(() => parseSubmit({ goal: 'g', config: {} }, undefined)).toThrow(/no LLM given/);
    expect(() => parseSubmit({ goal: ' ' }, llm)).toThrow(/the task needs a non-empty goal/);
  });

  it('refuses a submit that arrived after its acceptBy, naming the times and the issue', () => {
    expect(() => refuseLate('a1', { acceptBy: 1_000 }, 1_000)).not.toThrow();
    expect(() => refuseLate('a1', {}, 1_000_000)).not.toThrow();
    expect(() => refuseLate('a1', { acceptBy: 1_000 }, 1_001)).toThrow(
      expect.objectContaining({
        type: 'Refused',
        issues: [SUBMIT_EXPIRED],
        message: expect.stringMatching(
          /^the submit reached agent a1 at 1970-01-01T00:00:01.001Z, after 1970-01-01T00:00:01.000Z/,
        ),
      }),
    );
  });

  it('refuses a submit that would take what the agent carries past its byte limit', () => {
    const goal = 'g'.repeat(1000);
    expect(() => refuseOversize('a1', { small: true }, { goal })).not.toThrow();
    const carried = { tasks: 'x'.repeat(LIMITS.agentStateBytes) };
    expect(() => refuseOversize('a1', carried, { goal })).toThrow(RefusedError);
    expect(() => refuseOversize('a1', carried, { goal })).toThrow(
      /^agent a1 would carry 1502 KB of queued, cancelled and recent tasks, more than the 1500 KB it keeps/,
    );
  });

  it('answers an update delivered again with its first answer, remembering a bounded number', () => {
    const d: SubmitsData = {};
    rememberSubmit(d, undefined, { taskId: 'task-0', workflowId: 'wf', position: 0 });
    expect(d.submits).toBeUndefined();
    for (let i = 0; i < LIMITS.rememberedSubmits + 1; i++)
      rememberSubmit(d, `u${i}`, { taskId: `task-${i}`, workflowId: `wf-${i}`, position: i });
    expect(d.submits).toHaveLength(LIMITS.rememberedSubmits);
    expect(answeredSubmit(d, 'u0')).toBeUndefined();
    expect(answeredSubmit(d, 'u1')).toEqual({ taskId: 'task-1', workflowId: 'wf-1', position: 1 });
    expect(answeredSubmit(d, undefined)).toBeUndefined();
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
  });
});
