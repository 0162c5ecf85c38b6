import { getGuide } from '../guides';
import { booksOf } from './books';
import { checkpointOf, inputOf } from './test-support';

const listed = [{ name: 'my.tool', description: 'a worker tool', parameters: { type: 'object' } }];

describe("a run's books", () => {
  it("start a new task from the anchored head, nothing spent, counted or waiting, the config's tools offered", () => {
    const books = booksOf(inputOf({ tools: { allow: ['fs.read'] } }), 'agent-a1-task-1', false);
    expect(books.checkpoint).toEqual(checkpointOf(books.config));
    expect(books).toMatchObject({
      workflowId: 'agent-a1-task-1',
      halted: false,
      offered: ['fs.read'],
      tools: undefined,
    });
    expect(books.guide).toBe(getGuide('pain'));
    expect(books.spend.data).toEqual({ runTokens: 0, runCachedInputTokens: 0, runCostUsd: 0 });
    expect(books.counters.data.allowanceStart).toBe(0);
    expect(books.inbox.data).toEqual({ waiting: [], received: 0 });
    expect(books.window.data.store).toBe(false);
  });

  it("name the worker's listed tools in a new task's system prompt, and offer those", () => {
    const books = booksOf(inputOf({}, { tools: listed }), 'w', true);
    expect(books.checkpoint.messages[0]).toMatchObject({ text: expect.stringContaining('Tools: my.tool.') });
    expect(books.offered).toEqual(['my.tool']);
    expect(books.window.data.store).toBe(true);
  });

  it('resume a suspended task from its checkpoint, the loop cap counting from there', () => {
    const checkpoint = { ...checkpointOf(), ticks: 12 };
    const books = booksOf(inputOf({}, { checkpoint }), 'w', false);
    expect(books.checkpoint).toBe(checkpoint);
    expect(books.counters.data.allowanceStart).toBe(12);
  });

  it('take over what the run before counted when the task continued as new, and the messages it handed on', () => {
    const continued = { runTokens: 30, allowanceStart: 2, received: 3, omitted: { toolCalls: 1, injections: 0 } };
    const books = booksOf(inputOf({}, { continued, messages: [{ text: 'go on' }] }), 'w', true);
    expect(books.spend.data.runTokens).toBe(30);
    expect(books.counters.data).toMatchObject({ allowanceStart: 2, omitted: { toolCalls: 1, injections: 0 } });
    expect(books.inbox.data).toEqual({ waiting: [{ text: 'go on' }], received: 3 });
  });
});
