import { ConfigError, parseAgentConfig, parseTaskConfig } from './config';

const catchError = (fn: () => unknown): ConfigError => {
  try {
    fn();
  } catch (err) {
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
};

describe('parseAgentConfig', () => {
  it('fills in every default of an empty config', () => {
    const c = parseAgentConfig({}, 'scripted:/x.json');
    // The seeds' verification step is on unless a config turns it off.
    expect(c).toMatchObject({
      guide: 'pain',
      llm: { provider: 'scripted', file: '/x.json' },
      workspace: ['./workspace'],
      contextWindow: 40,
      verify: true,
    });
    expect(parseAgentConfig({ verify: false }, 'scripted:/x.json').verify).toBe(false);
    expect(c.safety).toEqual({
      maxTicks: 50,
      tokenBudget: 100000,
      repeatThreshold: 3,
      frustrationThreshold: 5,
      cascadeWindow: 10,
      cascadeErrors: 8,
      toolTimeoutMs: 30000,
      llmTimeoutMs: 120000,
      maxOutputTokens: 8192,
    });
    expect(c.retry).toEqual({
      initialIntervalMs: 1000,
      backoffCoefficient: 2,
      maximumIntervalMs: 30000,
      maximumAttempts: 5,
    });
  });

  it('fills in the defaults of a partial config, field by field', () => {
    const c = parseAgentConfig({ safety: { maxTicks: 3 } }, 'scripted:/x.json');
    expect(c.safety.maxTicks).toBe(3);
    expect(c.safety.tokenBudget).toBe(100000);
  });

  it('checks the guide and the llm inside the schema, so every client gets the same error', () => {
    const e = catchError(() => parseAgentConfig({ guide: 'x', llm: 'gpt4' }));
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.type).toBe('InvalidArgument');
    expect(e.issues).toEqual([
      'guide: unknown guide "x": use one of pain, safety, learning, debugging, neutral',
      expect.stringMatching(/^llm: Invalid --llm "gpt4": unknown provider "gpt4"/),
    ]);
  });

  it('names each bad field once, without repeating its path in the message', () => {
    const e = catchError(() => parseAgentConfig({ safety: { maxTicks: -1, tokenBudget: 1.5 } }, 'scripted:/x.json'));
    expect(e.issues).toEqual(['safety.maxTicks: must be > 0', 'safety.tokenBudget: must be a whole number']);
    expect(e.message).toContain('safety.maxTicks: must be > 0');
  });

  it('bounds every number so payloads and histories stay inside Temporal limits', () => {
    const e = catchError(() =>
      parseAgentConfig(
        { safety: { maxTicks: 1_000_000 }, tools: { maxOutputBytes: 16 * 1024 * 1024 } },
        'scripted:/x.json',
      ),
    );
    expect(e.issues).toEqual(['safety.maxTicks: must be <= 100000', 'tools.maxOutputBytes: must be <= 1048576']);
  });

  it('takes the owner’s instructions and a tool allow-list, and refuses an entry that is no tool name', () => {
    const cfg = parseAgentConfig(
      { instructions: 'Answer in French.', tools: { allow: ['fs.read', 'weather', 'github.*'] } },
      'scripted:/x.json',
    );
    expect(cfg).toMatchObject({
      instructions: 'Answer in French.',
      tools: { allow: ['fs.read', 'weather', 'github.*'] },
    });
    expect(parseAgentConfig({}, 'scripted:/x.json').tools.allow).toBeUndefined();
    // Whether a name is one of the worker's tools is the worker's to say, at submit.
    const e = catchError(() =>
      parseAgentConfig({ instructions: 'x'.repeat(16_001), tools: { allow: ['rm -rf'] } }, 'scripted:/x.json'),
    );
    expect(e.issues).toEqual([
      'instructions: must be at most 16000 characters',
      'tools.allow.0: "rm -rf" is not a tool name (e.g. fs.read, fs.write, or github.* for every tool of the MCP server github)',
    ]);
    expect(catchError(() => parseAgentConfig({ tools: { allow: [] } }, 'scripted:/x.json')).issues).toEqual([
      'tools.allow: allow needs at least one tool (leave it out to offer every tool)',
    ]);
  });

  it('takes MCP servers over stdio and Streamable HTTP, and names what is wrong with one', () => {
    const cfg = parseAgentConfig(
      {
        tools: {
          mcp: {
            files: { command: 'node', args: ['server.js'], env: { TOKEN: '${env:FILES_TOKEN}' } },
            github: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ${env:GH}' } },
          },
        },
      },
      'scripted:/x.json',
    );
    expect(cfg.tools.mcp).toEqual({
      files: { command: 'node', args: ['server.js'], env: { TOKEN: '${env:FILES_TOKEN}' } },
      github: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ${env:GH}' } },
    });
    expect(parseAgentConfig({ tools: { mcp: { a: { command: 'node' } } } }, 'scripted:/x.json').tools.mcp).toEqual({
      a: { command: 'node', args: [] },
    });
    expect(
      catchError(() => parseAgentConfig({ tools: { mcp: { fs: { command: 'node' } } } }, 'scripted:/x.json')).issues,
    ).toEqual(["tools.mcp: an MCP server may not be named like a built-in tool's prefix (fs, shell, http)"]);
    expect(
      catchError(() => parseAgentConfig({ tools: { mcp: { 'my server': { command: 'node' } } } }, 'scripted:/x.json'))
        .issues[0],
    ).toContain('an MCP server name is a letter, then letters, digits, _ or -');
    expect(
      catchError(() => parseAgentConfig({ tools: { mcp: { a: { url: 'ftp://x' } } } }, 'scripted:/x.json')).issues,
    ).toEqual(['tools.mcp.a.url: must be an http(s) URL']);
    expect(
      catchError(() => parseAgentConfig({ tools: { mcp: { a: { program: 'x' } } } }, 'scripted:/x.json')).issues,
    ).toEqual(['tools.mcp.a: an MCP server is {command, args?, env?} (stdio) or {url, headers?} (Streamable HTTP)']);
  });

  it('refuses unknown fields and an inverted cascade', () => {
    expect(catchError(() => parseAgentConfig({ colour: 'red' }, 'scripted:/x.json')).issues[0]).toMatch(
      /Unrecognized key/,
    );
    expect(
      catchError(() => parseAgentConfig({ safety: { cascadeWindow: 3, cascadeErrors: 5 } }, 'scripted:/x.json')).issues,
    ).toEqual(['safety.cascadeErrors: cascadeErrors must be <= cascadeWindow']);
  });

  it('says how to give an LLM when none is given', () => {
    expect(catchError(() => parseAgentConfig({})).message).toMatch(/no LLM given. Pass --llm/);
  });
});

describe('the context config', () => {
  it('defaults to the prefix strategy and takes any well-formed strategy id (the worker checks it has it)', () => {
    expect(parseAgentConfig({}, 'scripted:/x.json').context).toEqual({ strategy: 'prefix' });
    for (const strategy of ['window', 'summarize', 'my-team_strategy2'])
      expect(parseAgentConfig({ context: { strategy } }, 'scripted:/x.json').context.strategy).toBe(strategy);
  });

  it('refuses a malformed strategy id or an unknown field, saying what an id looks like', () => {
    expect(() => parseAgentConfig({ context: { strategy: 'Prefix!' } }, 'scripted:/x.json')).toThrow(
      /context\.strategy: a strategy id is a lowercase letter, then lowercase letters, digits, _ or - \(e\.g\. prefix, window, summarize\)/,
    );
    expect(() => parseAgentConfig({ context: { strategy: 'prefix', keep: 3 } }, 'scripted:/x.json')).toThrow(
      /context: Unrecognized key/,
    );
  });
});

describe('parseTaskConfig', () => {
  it('keeps of safety only the limits the config gives, so the agent’s fill in the rest', () => {
    expect(parseTaskConfig({}, 'scripted:x.json').safety).toEqual({});
    expect(parseTaskConfig({ safety: { tokenBudget: 500 } }, 'scripted:x.json')).toMatchObject({
      guide: 'pain',
      contextWindow: 40,
      safety: { tokenBudget: 500 },
    });
    const parsed = parseTaskConfig({ safety: { maxTicks: 3 } }, 'scripted:x.json');
    expect(parseTaskConfig(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
  });

  it('names every bad field at once, the safety fields with the others', () => {
    let error: ConfigError | undefined;
    try {
      parseTaskConfig({ guide: 'nope', safety: { maxTicks: 0, tokenBudgett: 5 } }, 'scripted:x.json');
    } catch (err) {
      error = err as ConfigError;
    }
    expect(error?.issues).toEqual([
      expect.stringMatching(/^guide: unknown guide "nope"/),
      'safety.maxTicks: must be > 0',
      'safety: Unrecognized key: "tokenBudgett"',
    ]);
  });

  it('checks the cascade pair when both are given, and leaves a lone one to the agent', () => {
    expect(() => parseTaskConfig({ safety: { cascadeWindow: 5, cascadeErrors: 6 } }, 'scripted:x.json')).toThrow(
      /safety\.cascadeErrors: cascadeErrors must be <= cascadeWindow/,
    );
    expect(parseTaskConfig({ safety: { cascadeErrors: 20 } }, 'scripted:x.json').safety).toEqual({ cascadeErrors: 20 });
  });
});
