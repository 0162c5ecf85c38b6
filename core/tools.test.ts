import { offeredTools, TOOL_NAMES, toolSignature, toolSpecs, toolSummary, validateToolCall } from './tools';

describe('toolSpecs', () => {
  it('declares every tool with a description and a plain JSON Schema object', () => {
    const specs = toolSpecs();
    expect(specs.map((s) => s.name)).toEqual(['fs.read', 'fs.write', 'fs.list', 'shell.run', 'http.get']);
    expect(TOOL_NAMES).toEqual(specs.map((s) => s.name));
    for (const spec of specs) {
      expect(spec.description.length).toBeGreaterThan(10);
      expect(spec.parameters).toMatchObject({ type: 'object', additionalProperties: false });
      expect(spec.parameters).not.toHaveProperty('$schema');
      expect(JSON.parse(JSON.stringify(spec.parameters))).toEqual(spec.parameters);
    }
  });

  it('marks only the mandatory parameters as required', () => {
    const read = toolSpecs().find((s) => s.name === 'fs.read')!;
    expect(read.parameters.required).toEqual(['path']);
    expect(read.parameters.properties).toMatchObject({ path: { type: 'string' }, maxBytes: { type: 'integer' } });
  });

  it('renders a compact signature for suggestions', () => {
    expect(toolSignature('fs.read')).toBe('fs.read({ path: string, maxBytes?: integer })');
    expect(toolSignature('shell.run')).toBe(
      'shell.run({ command: string, args?: string[], cwd?: string, timeoutMs?: integer })',
    );
  });
});

describe('validateToolCall', () => {
  it('accepts valid arguments and returns the parsed value', () => {
    expect(validateToolCall({ id: '1', name: 'fs.read', args: { path: 'a.txt', maxBytes: 10 } })).toEqual({
      ok: true,
      args: { path: 'a.txt', maxBytes: 10 },
    });
  });

  it('uses rawArguments when they parse', () => {
    expect(validateToolCall({ id: '1', name: 'fs.list', rawArguments: '{"path":"sub"}' })).toEqual({
      ok: true,
      args: { path: 'sub' },
    });
  });

  it('treats a call without arguments as an empty object', () => {
    expect(validateToolCall({ id: '1', name: 'fs.list' })).toEqual({ ok: true, args: {} });
  });

  it('reports unparseable rawArguments as E_INVALID_JSON with an excerpt and the parse error', () => {
    const result = validateToolCall({ id: '1', name: 'fs.read', rawArguments: '{not json' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatchObject({ code: 'E_INVALID_JSON', kind: 'execution', source: 'fs.read' });
    expect(result.error.message).toContain('{not json');
    expect(result.error.message).toMatch(/JSON/);
    expect(result.error.suggestion).toMatch(/JSON object/);
  });

  it('shortens a long raw excerpt', () => {
    const result = validateToolCall({ id: '1', name: 'fs.read', rawArguments: `{${'x'.repeat(500)}` });
    if (result.ok) throw new Error('expected a failure');
    expect(result.error.message.length).toBeLessThan(300);
  });

  it('reports an unknown tool by name and lists the known tools', () => {
    const result = validateToolCall({ id: '1', name: 'fs.delete', args: { path: 'x' } });
    if (result.ok) throw new Error('expected a failure');
    expect(result.error).toMatchObject({ code: 'E_UNKNOWN_TOOL', kind: 'execution', source: 'fs.delete' });
    expect(result.error.message).toContain('fs.delete');
    for (const name of TOOL_NAMES) expect(result.error.suggestion).toContain(name);
  });

  it('does not treat inherited object keys as tools', () => {
    const result = validateToolCall({ id: '1', name: 'toString', args: {} });
    expect(result.ok ? undefined : result.error.code).toBe('E_UNKNOWN_TOOL');
  });

  it('reports schema errors with the issue paths and the expected parameters', () => {
    const result = validateToolCall({ id: '1', name: 'shell.run', args: { command: 'ls', args: ['-l', 3] } });
    if (result.ok) throw new Error('expected a failure');
    expect(result.error).toMatchObject({ code: 'E_SCHEMA', kind: 'execution', source: 'shell.run' });
    expect(result.error.message).toContain('args.1');
    expect(result.error.suggestion).toContain('command: string');
  });

  it('reports a missing required parameter and a misspelt key', () => {
    const result = validateToolCall({ id: '1', name: 'fs.read', args: { file: 'a.txt' } });
    if (result.ok) throw new Error('expected a failure');
    expect(result.error.message).toContain('path:');
    expect(result.error.message).toContain('"file"');
  });

  it('reports non-object arguments at the root', () => {
    const result = validateToolCall({ id: '1', name: 'http.get', rawArguments: '"https://example.com"' });
    if (result.ok) throw new Error('expected a failure');
    expect(result.error.code).toBe('E_SCHEMA');
    expect(result.error.message).toContain('(root)');
  });
});

describe('toolSummary', () => {
  it('names the tool and the argument its definition says it acts on', () => {
    expect(toolSummary('fs.read', { path: 'notes.md' })).toBe('tool fs.read notes.md');
    expect(toolSummary('shell.run', { command: 'ls', args: ['-l'] })).toBe('tool shell.run ls');
    expect(toolSummary('http.get', { url: 'https://example.com/' })).toBe('tool http.get https://example.com/');
  });

  it('leaves the target out when the argument is absent, and cuts a long one at 80 characters', () => {
    expect(toolSummary('fs.list', {})).toBe('tool fs.list');
    expect(toolSummary('fs.write', { path: 'p'.repeat(200), content: '' })).toBe(`tool fs.write ${'p'.repeat(80)}`);
  });
});

describe('an agent’s tool allow-list', () => {
  it('offers only the allowed tools, in declaration order, to the model and in the prompt’s list', () => {
    expect(offeredTools(['fs.list', 'fs.read'])).toEqual(['fs.read', 'fs.list']);
    expect(toolSpecs(['fs.list']).map((t) => t.name)).toEqual(['fs.list']);
    expect(toolSpecs().map((t) => t.name)).toEqual(TOOL_NAMES);
  });

  it('refuses a call to a tool the agent is not offered as E_UNKNOWN_TOOL, naming the tools it has', () => {
    const checked = validateToolCall({ id: 'c1', name: 'shell.run', args: { command: 'ls' } }, ['fs.read', 'fs.list']);
    expect(checked).toMatchObject({
      ok: false,
      error: {
        code: 'E_UNKNOWN_TOOL',
        kind: 'execution',
        message: "Tool 'shell.run' is not offered to this agent.",
        suggestion: 'Tools you can call: fs.read, fs.list.',
      },
    });
    expect(validateToolCall({ id: 'c2', name: 'fs.read', args: { path: 'a' } }, ['fs.read'])).toMatchObject({
      ok: true,
    });
  });
});
