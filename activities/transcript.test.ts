import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { ChatMessage, LlmCallInput, LlmResponse } from '../core/llm';
import { toolSpecs } from '../core/tools';
import { localDirStore } from './store';
import { transcriptStore, withStore } from './transcript';
import { parseLlmSpec } from '../core/llm-spec';

const head: ChatMessage[] = [
  { role: 'system', text: 'You are careful.' },
  { role: 'user', text: 'Read notes.md' },
];
const call = (over: Partial<LlmCallInput>): LlmCallInput => ({
  llm: parseLlmSpec('scripted:x'),
  agentId: 'a1',
  taskId: 'task-1',
  callNumber: 1,
  tick: 1,
  maxOutputTokens: 100,
  ...over,
});
const reply = (text: string, toolCalls: LlmResponse['toolCalls'] = []): LlmResponse => ({
  text,
  toolCalls,
  usage: { inputTokens: 50, outputTokens: 5 },
  providerParts: [{ text, thoughtSignature: 'sig' }],
});

describe('the transcript store', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'starry-transcript-'));
  });

  it('resolves a delta into the messages and tools a provider receives, and links each answer to the next call', async () => {
    const t = transcriptStore(localDirStore(dir));
    const first = await t.resolve(call({ context: { head, drop: 0, append: [] }, tools: toolSpecs() }));
    expect(first.request.messages).toEqual(head);
    expect(first.request.tools).toEqual(toolSpecs());
    const answered = await first.answer(reply('Reading.', [{ id: 'c1', name: 'fs.read', args: { path: 'notes.md' } }]));
    // The provider parts stay in the store; the workflow gets references.
    expect(answered.providerParts).toBeUndefined();
    expect(answered.message).toMatchObject({ role: 'assistant', ref: expect.stringMatching(/^[0-9a-f]{64}$/) });

    const result = await t.keep({ role: 'tool', callId: 'c1', name: 'fs.read', text: 'the notes' });
    const second = await t.resolve(
      call({
        callNumber: 2,
        context: { base: answered.context?.ref as string, drop: 0, append: [result, { role: 'user', text: 'VERIFY' }] },
      }),
    );
    expect(second.request.messages).toEqual([
      ...head,
      {
        role: 'assistant',
        text: 'Reading.',
        toolCalls: [{ id: 'c1', name: 'fs.read', args: { path: 'notes.md' } }],
        providerParts: [{ text: 'Reading.', thoughtSignature: 'sig' }],
      },
      { role: 'tool', callId: 'c1', name: 'fs.read', text: 'the notes' },
      { role: 'user', text: 'VERIFY' },
    ]);
    expect(second.request.tools).toEqual(toolSpecs());
    // Dropping the oldest after the head: the window moved.
    const third = await t.resolve(
      call({
        callNumber: 3,
        context: { base: (await second.answer(reply('Done.'))).context?.ref as string, drop: 2, append: [] },
      }),
    );
    expect(third.request.messages.map((m) => m.role)).toEqual(['system', 'user', 'user', 'assistant']);

    const last = await third.answer(reply('Done again.'));
    const all = await t.transcript(last.context?.ref as string, [{ role: 'user', text: 'after' }]);
    expect(all.map((m) => ('text' in m ? m.text : ''))).toEqual([
      'You are careful.',
      'Read notes.md',
      'Reading.',
      'the notes',
      'VERIFY',
      'Done.',
      'Done again.',
      'after',
    ]);
  });

  it('passes a whole context (a direct call) through unchanged', async () => {
    const t = transcriptStore(localDirStore(dir));
    const old = await t.resolve(call({ messages: head, tools: [] }));
    expect(old.request.messages).toEqual(head);
    const r = reply('x');
    expect(await old.answer(r)).toBe(r);
  });

  it('fails a call naming the blob when the store lost it, for good; other store failures are transient', async () => {
    const t = transcriptStore(localDirStore(dir));
    const base = (
      await (await t.resolve(call({ context: { head, drop: 0, append: [] }, tools: [] }))).answer(reply('a'))
    ).context?.ref as string;
    for (const d of readdirSync(dir)) rmSync(path.join(dir, d), { recursive: true, force: true });
    const missing = await withStore(() => t.resolve(call({ context: { base, drop: 0, append: [] } }))).catch(
      (e: unknown) => e,
    );
    expect(missing).toBeInstanceOf(ApplicationFailure);
    expect(missing).toMatchObject({
      type: 'E_BLOB_MISSING',
      nonRetryable: true,
      message: expect.stringContaining(`sha256:${base}`),
    });
    const broken = await withStore(() => Promise.reject(new Error('disk on fire'))).catch((e: unknown) => e);
    expect(broken).toMatchObject({
      type: 'E_UNAVAILABLE',
      nonRetryable: false,
      message: expect.stringContaining('disk on fire'),
    });
  });
});
