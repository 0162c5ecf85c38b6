import { LIMITS } from '../payloads';
import { messageText, RunInbox } from './inbox';
import { roundTrip } from './test-support';

describe('RunInbox', () => {
  it('keeps the messages that arrived before the run, then those it takes, in order', () => {
    const inbox = RunInbox.of([{ text: 'first' }]);
    expect(inbox.receive({ text: 'use v2', by: 'ana' })).toBeUndefined();
    expect(inbox.take()).toEqual([{ text: 'first' }, { text: 'use v2', by: 'ana' }]);
    expect(inbox.take()).toEqual([]);
  });

  it('refuses a malformed message, saying what is wrong, and does not count it', () => {
    const inbox = RunInbox.of();
    expect(inbox.receive({ text: 42 })).toMatch(/text must be a string/);
    expect(inbox.receive({ text: 'hi', extra: true })).toMatch(/extra/);
    expect(inbox.data.received).toBe(0);
  });

  it('takes at most LIMITS.messagesPerRun a run, those the run before it took included', () => {
    const inbox = RunInbox.of([], LIMITS.messagesPerRun - 1);
    expect(inbox.receive({ text: 'last one' })).toBeUndefined();
    expect(inbox.receive({ text: 'one too many' })).toBe(`more than ${LIMITS.messagesPerRun} this run`);
    expect(inbox.take()).toEqual([{ text: 'last one' }]);
  });

  it('says who wrote a message, a human operator when nobody signed it', () => {
    expect(messageText({ text: 'use v2', by: 'ana' })).toBe('Message from ana: use v2');
    expect(messageText({ text: 'stop' })).toBe('Message from a human operator: stop');
  });

  it('serializes and deserializes: a copy keeps the waiting messages and the count', () => {
    const inbox = RunInbox.of([], LIMITS.messagesPerRun - 1);
    inbox.receive({ text: 'waiting' });
    const copy = new RunInbox(roundTrip(inbox.data));
    expect(copy.receive({ text: 'over' })).toBe(`more than ${LIMITS.messagesPerRun} this run`);
    expect(copy.take()).toEqual([{ text: 'waiting' }]);
  });
});
