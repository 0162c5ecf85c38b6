import { bindingReaches, describeServer, mcpEnvBindingIssues } from './mcp-env';

const GH = { command: 'node', args: ['/opt/mcp/gh.js'] };

describe('bindingReaches', () => {
  it('reaches an entry that pins its args, named by its command or by itself', () => {
    expect(bindingReaches(['node'], GH)).toBe(true);
    expect(bindingReaches([GH], GH)).toBe(true);
    expect(bindingReaches([{ command: 'node', args: [] }], { command: 'node', args: [] })).toBe(true);
  });

  it('never reaches an entry with free args, another entry, or none', () => {
    expect(bindingReaches(['node'], { command: 'node' })).toBe(false);
    expect(bindingReaches([GH], { command: 'node' })).toBe(false);
    expect(bindingReaches([GH], { command: 'node', args: ['/opt/mcp/jira.js'] })).toBe(false);
    expect(bindingReaches([GH], { command: 'node', args: ['/opt/mcp/gh.js', '--inspect'] })).toBe(false);
    expect(bindingReaches(['npx'], GH)).toBe(false);
    expect(bindingReaches(['node'], undefined)).toBe(false);
  });
});

describe('mcpEnvBindingIssues', () => {
  it('names each binding that would reach free args or names nothing, by its path', () => {
    const issues = mcpEnvBindingIssues(
      [{ name: 'OPEN' }, { name: 'GH_TOKEN', commands: ['node', GH, 'python3', { command: 'node', args: ['x'] }] }],
      [{ command: 'node' }, GH],
    );
    expect(issues.map((i) => i.path.join('.'))).toEqual([
      'mcpEnv.1.commands.0',
      'mcpEnv.1.commands.2',
      'mcpEnv.1.commands.3',
    ]);
    expect(issues[0]?.message).toContain('mcpCommands.0 leaves its args free');
    expect(issues[1]?.message).toContain("'python3', which no mcpCommands entry names");
    expect(issues[2]?.message).toContain(
      `node ["x"], which is no mcpCommands entry (pinned entries of 'node': ["/opt/mcp/gh.js"])`,
    );
  });

  it('has nothing to say of unbound variables, hosts, and commands whose every entry is pinned', () => {
    expect(
      mcpEnvBindingIssues([{ name: 'A' }, { name: 'B', commands: ['node', GH] }], [GH, { command: 'node', args: [] }]),
    ).toEqual([]);
  });

  it('describes a server as messages name it', () => {
    expect(describeServer('npx')).toBe('command npx');
    expect(describeServer(GH)).toBe('node ["/opt/mcp/gh.js"]');
  });
});
