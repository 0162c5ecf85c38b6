import { clear, dequeue, emptyInbox, enqueue, ordered, type PriorityInbox } from './priority-inbox';

function inboxOf(...tasks: Array<[string, number]>): PriorityInbox {
  return tasks.reduce(
    (inbox, [taskId, priority]) => enqueue(inbox, { taskId, goal: `goal ${taskId}`, priority }),
    emptyInbox(),
  );
}

describe('priority inbox', () => {
  it('runs the lowest priority number first and keeps FIFO within a priority', () => {
    const inbox = inboxOf(['a', 5], ['b', 1], ['c', 5], ['d', 1]);
    expect(ordered(inbox).map((t) => t.taskId)).toEqual(['b', 'd', 'a', 'c']);
  });

  it('dequeues one task and leaves the rest in order', () => {
    const { task, inbox } = dequeue(inboxOf(['a', 5], ['b', 2]));
    expect(task?.taskId).toBe('b');
    expect(ordered(inbox).map((t) => t.taskId)).toEqual(['a']);
  });

  it('returns no task from an empty inbox', () => {
    expect(dequeue(emptyInbox()).task).toBeUndefined();
  });

  it('rejects priority 0, which is reserved for SYSTEM_HALT, with a RangeError naming the value', () => {
    expect(() => enqueue(emptyInbox(), { taskId: 'x', goal: 'g', priority: 0 })).toThrow(
      /reserved for SYSTEM_HALT\), got 0/,
    );
    expect(() => enqueue(emptyInbox(), { taskId: 'x', goal: 'g', priority: 2.5 })).toThrow(RangeError);
  });

  it('clears everything and reports what was cleared in run order', () => {
    const { cleared, inbox } = clear(inboxOf(['a', 5], ['b', 1]));
    expect(cleared.map((t) => t.taskId)).toEqual(['b', 'a']);
    expect(inbox.items).toEqual([]);
  });

  it('does not change the inbox it is given', () => {
    const before = inboxOf(['a', 5]);
    const copy = structuredClone(before);
    enqueue(before, { taskId: 'b', goal: 'g', priority: 1 });
    dequeue(before);
    expect(before).toEqual(copy);
  });

  it('serializes and deserializes', () => {
    const inbox = inboxOf(['a', 5], ['b', 1]);
    expect(JSON.parse(JSON.stringify(inbox))).toEqual(inbox);
    expect(structuredClone(inbox)).toEqual(inbox);
  });
});
