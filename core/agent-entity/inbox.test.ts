import { RefusedError } from '../errors';
import { LIMITS } from '../payloads';
import { emptyInbox } from '../priority-inbox';
import {
  checkPriority,
  clearInbox,
  inOrder,
  isQueued,
  queueTask,
  refuseFullInbox,
  takeQueued,
  taskIdFor,
  type InboxData,
} from './inbox';

const fresh = (): InboxData => ({ inbox: emptyInbox(), nextTaskNumber: 1 });

describe('agent inbox: its queue of tasks', () => {
  it('numbers the tasks whose submitter chose no id, around the ids that are taken', () => {
    const d = fresh();
    const taken = new Set(['task-2']);
    expect(taskIdFor(d, undefined, (id) => taken.has(id))).toBe('task-1');
    expect(taskIdFor(d, undefined, (id) => taken.has(id))).toBe('task-3');
    expect(taskIdFor(d, 'mine', () => true)).toBe('mine');
    expect(d.nextTaskNumber).toBe(4);
  });

  it('queues by priority, first come first served within one, and says each task’s place', () => {
    const d = fresh();
    expect(queueTask(d, 'a', { goal: 'a' })).toBe(0);
    expect(queueTask(d, 'b', { goal: 'b', priority: 2 })).toBe(0);
    expect(queueTask(d, 'c', { goal: 'c' })).toBe(2);
    expect(queueTask(d, 'd', { goal: 'd', priority: 2, traceparent: 'tp' })).toBe(1);
    expect(inOrder(d).map((t) => t.taskId)).toEqual(['b', 'd', 'a', 'c']);
    expect(inOrder(d)[1]).toMatchObject({ taskId: 'd', priority: 2, traceparent: 'tp' });
    expect(isQueued(d, 'c')).toBe(true);
    expect(takeQueued(d)?.taskId).toBe('b');
    expect(isQueued(d, 'b')).toBe(false);
    expect(clearInbox(d).map((t) => t.taskId)).toEqual(['d', 'a', 'c']);
    expect(takeQueued(d)).toBeUndefined();
    expect(d.inbox.items).toEqual([]);
  });

  it('refuses a task when the queue is full, and a priority outside 1..9, changing nothing', () => {
    const d = fresh();
    for (let i = 0; i < LIMITS.queuedTasks; i++) queueTask(d, `t${i}`, { goal: 'g' });
    const before = JSON.stringify(d);
    expect(() => refuseFullInbox(d, 'a1')).toThrow(RefusedError);
    expect(() => refuseFullInbox(d, 'a1')).toThrow(
      `agent a1 already has ${LIMITS.queuedTasks} tasks queued (the most it takes): submit again when some have run`,
    );
    expect(() => refuseFullInbox(fresh(), 'a1')).not.toThrow();
    expect(() => checkPriority({ goal: 'g', priority: 0 })).toThrow('0 is reserved for SYSTEM_HALT');
    expect(() => checkPriority({ goal: 'g', priority: 10 })).toThrow(RangeError);
    expect(() => checkPriority({ goal: 'g' })).not.toThrow();
    expect(JSON.stringify(d)).toBe(before);
  });

  it('is plain data that survives JSON, as continue-as-new carries it', () => {
    const d = fresh();
    queueTask(
      d,
      taskIdFor(d, undefined, () => false),
      { goal: 'g', priority: 3 },
    );
    const carried: InboxData = JSON.parse(JSON.stringify(d));
    expect(carried).toEqual(d);
    expect(taskIdFor(carried, undefined, () => false)).toBe('task-2');
  });
});
