import fc from 'fast-check';
import type { ChatMessage } from '../../core/llm';
import { TOOL_NAMES, toolSpecs, validateToolCall } from '../../core/tools';
import {
  answerInstructions,
  localAnswerSchema,
  localChatHistory,
  parseLocalAnswer,
  worstCaseTokens,
  type AnswerSchema,
} from './local-format';

type Node = Record<string, unknown>;

/** Every value the grammar built from `schema` admits, as a fast-check arbitrary (full Unicode strings). */
function admitted(schema: Node): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if (Array.isArray(schema.oneOf)) return fc.oneof(...(schema.oneOf as Node[]).map(admitted));
  switch (schema.type) {
    case 'string':
      return fc.string({
        unit: 'binary',
        minLength: (schema.minLength as number) ?? 0,
        maxLength: schema.maxLength as number,
      });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(admitted(schema.items as Node), {
        minLength: (schema.minItems as number) ?? 0,
        maxLength: schema.maxItems as number,
      });
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Node>;
      return fc.record(Object.fromEntries(Object.entries(props).map(([k, v]) => [k, admitted(v)])));
    }
    default:
      throw new Error(`the answer schema has a node the grammar cannot bound: ${JSON.stringify(schema)}`);
  }
}

/** Every string node of a schema. */
function strings(schema: unknown, out: Node[] = []): Node[] {
  if (Array.isArray(schema)) schema.forEach((s) => strings(s, out));
  else if (typeof schema === 'object' && schema !== null) {
    const node = schema as Node;
    if (node.type === 'string') out.push(node);
    Object.values(node).forEach((v) => strings(v, out));
  }
  return out;
}

const alternatives = (schema: AnswerSchema) => schema.oneOf as Array<{ properties: Record<string, Node> }>;

describe('localAnswerSchema', () => {
  const schema = localAnswerSchema(toolSpecs(), { maxOutputTokens: 8192 });

  it('offers one alternative per registry tool plus the final answer', () => {
    const tools = alternatives(schema).flatMap((a) => ('tool' in a.properties ? [a.properties.tool?.const] : []));
    expect(tools).toEqual(TOOL_NAMES);
    expect(alternatives(schema).at(-1)?.properties).toEqual({ final_answer: { type: 'string', maxLength: 512 } });
  });

  it('bounds every string it admits', () => {
    const all = strings(schema);
    expect(all.length).toBeGreaterThan(5);
    for (const s of all) expect(s.maxLength).toEqual(expect.any(Number));
  });

  it('admits only tool calls that pass the registry’s own validation', () => {
    fc.assert(
      fc.property(admitted(schema), (answer) => {
        const parsed = parseLocalAnswer(JSON.stringify(answer), { callNumber: 1 });
        for (const call of parsed.toolCalls) expect(validateToolCall(call)).toMatchObject({ ok: true });
        if (parsed.toolCalls.length === 0) expect(parsed.text).toEqual(expect.any(String));
      }),
      { numRuns: 500 },
    );
  });

  it('leaves out arguments whose bounds a grammar cannot enforce, and offers each optional one as a variant', () => {
    const args = (name: string) =>
      alternatives(schema).find((a) => a.properties.tool?.const === name)?.properties.arguments as Node;
    expect(args('fs.read')).toEqual({ type: 'object', properties: { path: { type: 'string', maxLength: 256 } } });
    const list = (args('fs.list').oneOf as Node[]).map((v) => Object.keys(v.properties as Node));
    expect(list).toEqual([[], ['path']]);
    const shell = (args('shell.run').oneOf as Node[]).map((v) => Object.keys(v.properties as Node));
    expect(shell).toEqual([['command'], ['command', 'args'], ['command', 'cwd'], ['command', 'args', 'cwd']]);
  });

  it('leaves out a tool whose required argument a grammar cannot enforce', () => {
    const tools = [
      {
        name: 'slow',
        description: 'x',
        parameters: { type: 'object', properties: { ms: { type: 'integer', minimum: 1 } }, required: ['ms'] },
      },
      {
        name: 'fine',
        description: 'y',
        parameters: { type: 'object', properties: { id: { type: 'string', pattern: '^a' } } },
      },
    ];
    const names = alternatives(localAnswerSchema(tools, { maxOutputTokens: 4096 })).map(
      (a) => a.properties.tool?.const ?? 'final_answer',
    );
    expect(names).toEqual(['fine', 'final_answer']);
  });

  it('shrinks its bounds so the longest answer fits the token cap', () => {
    for (const cap of [8192, 2000, 600, 200, 80]) {
      const small = localAnswerSchema(toolSpecs(), { maxOutputTokens: cap });
      expect(worstCaseTokens(small)).toBeLessThanOrEqual(cap);
      expect(alternatives(small).at(-1)?.properties.final_answer).toBeDefined();
    }
    expect(localAnswerSchema(toolSpecs(), { maxOutputTokens: 8192 })).toEqual(schema);
  });

  it('keeps only the final answer when not even an empty tool call fits', () => {
    const tiny = localAnswerSchema(toolSpecs(), { maxOutputTokens: 30 });
    expect(alternatives(tiny).map((a) => Object.keys(a.properties))).toEqual([['final_answer']]);
  });

  it('never admits an answer longer than its worst case, whitespace and escapes included', () => {
    const small = localAnswerSchema(toolSpecs(), { maxOutputTokens: 1500 });
    fc.assert(
      fc.property(admitted(small), (answer) => {
        const text = JSON.stringify(answer, null, 4).replace(
          /[^\x20-\x7e\n]/g,
          (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
        );
        expect(text.length).toBeLessThanOrEqual(worstCaseTokens(small));
      }),
      { numRuns: 200 },
    );
  });
});

describe('localChatHistory', () => {
  const messages: ChatMessage[] = [
    { role: 'system', text: 'You are careful.' },
    { role: 'user', text: 'Read notes.md' },
    { role: 'assistant', toolCalls: [{ id: 'c1', name: 'fs.read', args: { path: 'notes.md' } }] },
    { role: 'tool', callId: 'c1', name: 'fs.read', text: 'x'.repeat(50) },
    { role: 'user', text: 'SYSTEM ALERT: stop.' },
    { role: 'assistant', text: 'Done.' },
  ];

  it('renders turns as the JSON the model answers with, tool results as user turns, and ends on an open model turn', () => {
    const history = localChatHistory(messages, toolSpecs(), { maxToolResultChars: 10 });
    expect(history.map((h) => h.type)).toEqual(['system', 'user', 'model', 'user', 'model', 'model']);
    expect(history[0]).toEqual({ type: 'system', text: `You are careful.\n\n${answerInstructions(toolSpecs())}` });
    expect(history[2]).toEqual({ type: 'model', response: ['{"tool":"fs.read","arguments":{"path":"notes.md"}}'] });
    expect(history[3]).toEqual({
      type: 'user',
      text: `Result of fs.read:\n${'x'.repeat(10)}\n…[40 more characters not shown]\n\nSYSTEM ALERT: stop.`,
    });
    expect(history[4]).toEqual({ type: 'model', response: ['{"final_answer":"Done."}'] });
    expect(history[5]).toEqual({ type: 'model', response: [] });
  });

  it('tells the model each tool with only the arguments it may give', () => {
    const text = answerInstructions(toolSpecs());
    expect(text).toContain('- fs.read(path: string): Read a text file inside the workspace.');
    expect(text).toContain('- fs.write(path: string, content: string, append?: boolean)');
    expect(text).toContain('- shell.run(command: string, args?: string[], cwd?: string)');
    expect(text).toContain('{"final_answer": "<your answer>"}');
  });
});

describe('parseLocalAnswer', () => {
  it('turns a tool answer into one tool call and a final answer into text', () => {
    expect(parseLocalAnswer('{"tool": "fs.list", "arguments": {}}', { callNumber: 2 })).toEqual({
      toolCalls: [{ id: 'local-2', name: 'fs.list', args: {} }],
    });
    expect(parseLocalAnswer('{"final_answer": "Done."}', { callNumber: 3 })).toEqual({ text: 'Done.', toolCalls: [] });
  });

  it('reports a tool call cut by the token cap with its raw text, so the loop sees invalid JSON', () => {
    const cut = parseLocalAnswer('{"tool": "fs.write", "arguments": {"path": "a.txt", "content": "hel', {
      callNumber: 4,
    });
    expect(cut).toEqual({
      toolCalls: [{ id: 'local-4', name: 'fs.write', rawArguments: '{"path": "a.txt", "content": "hel' }],
    });
    expect(validateToolCall(cut.toolCalls[0]!)).toMatchObject({ ok: false, error: { code: 'E_INVALID_JSON' } });
  });

  it('keeps a final answer cut by the token cap as the text so far', () => {
    expect(parseLocalAnswer('{"final_answer": "The file says \\"hi\\u00', { callNumber: 1 })).toEqual({
      text: 'The file says "hi',
      toolCalls: [],
    });
  });

  it('reports an answer cut before it said anything as invalid JSON', () => {
    expect(parseLocalAnswer('{"to', { callNumber: 1 })).toEqual({
      toolCalls: [{ id: 'local-1', name: 'unknown', rawArguments: '{"to' }],
    });
  });
});
