import { parseAgentConfig } from './config';
import {
  AgentIdSchema,
  AgentStatusSchema,
  HaltInputSchema,
  HumanMessageSchema,
  LIMITS,
  parsePayload,
  SubmitTaskInputSchema,
  TaskIdSchema,
  TaskProgressSchema,
  TaskResultSchema,
  UnlockInputSchema,
} from './contract';
import { InvalidArgumentError, isRequestError } from './errors';

const fails = (schema: { safeParse(x: unknown): { success: boolean } }, raw: unknown) => !schema.safeParse(raw).success;

describe('the contract schemas', () => {
  it('accept the documented payloads', () => {
    expect(
      SubmitTaskInputSchema.parse({
        goal: 'read notes.md',
        priority: 3,
        taskId: 'task-mine',
        config: { safety: { maxTicks: 3 } },
      }),
    ).toMatchObject({ goal: 'read notes.md' });
    expect(UnlockInputSchema.parse({ resume: true, addTokens: 5000, note: 'ok', by: 'alice' })).toEqual({
      resume: true,
      addTokens: 5000,
      note: 'ok',
      by: 'alice',
    });
    expect(HaltInputSchema.parse({})).toEqual({});
    expect(HumanMessageSchema.parse({ text: 'also check b.md', by: 'bob' })).toEqual({
      text: 'also check b.md',
      by: 'bob',
    });
  });

  // The corpus of malformed payloads: wrong types, missing fields, huge strings, negative numbers, unknown fields.
  it.each([
    ['submit: goal missing', SubmitTaskInputSchema, {}],
    ['submit: goal a number', SubmitTaskInputSchema, { goal: 42 }],
    ['submit: goal blank', SubmitTaskInputSchema, { goal: '  ' }],
    ['submit: goal huge', SubmitTaskInputSchema, { goal: 'x'.repeat(LIMITS.goalChars + 1) }],
    ['submit: priority 0', SubmitTaskInputSchema, { goal: 'g', priority: 0 }],
    ['submit: priority 1.5', SubmitTaskInputSchema, { goal: 'g', priority: 1.5 }],
    ['submit: priority "abc"', SubmitTaskInputSchema, { goal: 'g', priority: 'abc' }],
    ['submit: priority NaN', SubmitTaskInputSchema, { goal: 'g', priority: Number.NaN }],
    ['submit: unknown field', SubmitTaskInputSchema, { goal: 'g', urgent: true }],
    ['submit: taskId without task- prefix', SubmitTaskInputSchema, { goal: 'g', taskId: 'c1' }],
    ['unlock: addTokens -1', UnlockInputSchema, { addTokens: -1 }],
    ['unlock: addTokens 1.5', UnlockInputSchema, { addTokens: 1.5 }],
    ['unlock: addTokens huge', UnlockInputSchema, { addTokens: LIMITS.addTokens + 1 }],
    ['unlock: resume "yes"', UnlockInputSchema, { resume: 'yes' }],
    ['unlock: unknown field', UnlockInputSchema, { force: true }],
    ['unlock: note huge', UnlockInputSchema, { note: 'n'.repeat(LIMITS.noteChars + 1) }],
    ['halt: by a number', HaltInputSchema, { by: 7 }],
    ['message: text missing', HumanMessageSchema, {}],
    ['message: text huge', HumanMessageSchema, { text: 'm'.repeat(LIMITS.messageChars + 1) }],
    ['message: not an object', HumanMessageSchema, 'hello'],
    [
      'progress: fractional tokens',
      TaskProgressSchema,
      {
        taskId: 'task-1',
        tick: 1,
        tokensUsed: 10.5,
        runTokens: 1,
        counters: { consecutiveFailures: 0, repeat: null, window: [] },
      },
    ],
    [
      'progress: negative tokens',
      TaskProgressSchema,
      {
        taskId: 'task-1',
        tick: 1,
        tokensUsed: -5,
        runTokens: 1,
        counters: { consecutiveFailures: 0, repeat: null, window: [] },
      },
    ],
  ])('refuse %s', (_name, schema, raw) => {
    expect(fails(schema, raw)).toBe(true);
  });
});

describe('ids', () => {
  it.each(['default', 'demo-agent', 'a.b_c-9', 'A'])('accepts agent id %s', (id) =>
    expect(AgentIdSchema.parse(id)).toBe(id),
  );

  it.each(['', '-x', 'a b', 'a/b', '../x', 'é', 'col-task-2', 'a-task', 'x'.repeat(65), 'a\u0000b'])(
    'refuses agent id %j',
    (id) => {
      expect(fails(AgentIdSchema, id)).toBe(true);
    },
  );

  it("keeps agent and task workflow ids apart: no agent id can name another agent's task", () => {
    // `agent-col-task-2` is agent col's task-2; an agent named `col-task-2` would collide, so it is refused.
    expect(fails(AgentIdSchema, 'col-task-2')).toBe(true);
    expect(TaskIdSchema.parse('task-2')).toBe('task-2');
    expect(fails(TaskIdSchema, '2')).toBe(true);
  });
});

describe('parsePayload', () => {
  it('throws an InvalidArgumentError naming every invalid field', () => {
    let caught: unknown;
    try {
      parsePayload(UnlockInputSchema, { addTokens: -1, resume: 'yes' }, 'admin:unlock');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidArgumentError);
    expect(isRequestError(caught)).toBe(true);
    const e = caught as InvalidArgumentError;
    expect(e.type).toBe('InvalidArgument');
    expect(e.message).toMatch(/^invalid admin:unlock: /);
    expect(e.issues).toEqual(['resume: resume must be true or false', 'addTokens: addTokens must be >= 0']);
  });

  it('returns the parsed value', () => {
    expect(parsePayload(HaltInputSchema, { by: 'ops' }, 'halt')).toEqual({ by: 'ops' });
  });
});

describe('result schemas', () => {
  it('describe the result JSON and the agent status as the workflows produce them', () => {
    const result = {
      agentId: 'a',
      taskId: 'task-1',
      workflowId: 'agent-a-task-1',
      outcome: 'SUSPENDED',
      agentState: 'SAFETY_LOCKOUT',
      reason: { code: 'LOOP_CAP', message: 'tick cap' },
      ticks: 3,
      tokensUsed: 660,
      toolCalls: [
        {
          tick: 1,
          name: 'fs.read',
          args: { path: 'x' },
          fingerprint: '0123456789abcdef',
          status: 'failed',
          error: { code: 'ENOENT', kind: 'execution', message: 'no', source: 'fs.read' },
        },
      ],
      injections: [{ tick: 1, kind: 'PAIN', text: 'ouch' }],
    };
    expect(TaskResultSchema.parse(result)).toEqual(result);
    const status = {
      agentId: 'a',
      agentState: 'WAITING_FOR_EVENT',
      tokensUsed: 0,
      tokenBudget: 100000,
      queue: [],
      cancelledTasks: [],
      counters: { consecutiveFailures: 0, repeat: null, window: [] },
      tasks: [result],
      unlocks: [],
      limits: parseAgentConfig({}, 'scripted:/x.json').safety,
      limitChanges: [{ by: 'alice', from: { tokenBudget: 1000 }, to: { tokenBudget: 100000 } }],
      guide: 'pain',
      llm: 'scripted:/x.json',
    };
    expect(AgentStatusSchema.parse(status)).toEqual(status);
  });
});
