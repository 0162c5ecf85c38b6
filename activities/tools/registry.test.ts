import { parseTaskConfig } from '../../core/config';
import { ToolRegistry } from './registry';

const tools = (raw: object) => parseTaskConfig({ tools: raw }, 'scripted:x.json').tools;

describe("the registry's check of a task's tool names", () => {
  const registry = new ToolRegistry();

  it('refuses an approval rule naming a tool the worker does not have, as a typo in tools.allow', () => {
    const why = registry.refusedAllow(tools({ approval: { ask: ['fs.wirte'], deny: [] } }));
    expect(why).toMatch(
      /^tools\.approval\.ask: 'fs\.wirte' is not a tool of this worker \(its tools: fs\.read, fs\.write/,
    );
    expect(registry.refusedAllow(tools({ approval: { ask: [], deny: [{ tool: 'shell.rn' }] } }))).toMatch(
      /^tools\.approval\.deny: 'shell\.rn' is not a tool/,
    );
    expect(registry.refusedAllow(tools({ allow: ['fs.raed'], approval: { ask: ['http.gte'], deny: [] } }))).toMatch(
      /^tools\.allow: 'fs\.raed'; tools\.approval\.ask: 'http\.gte' are not a tool of this worker/,
    );
  });

  it("takes a rule naming a worker's tool, a prefix of one, every tool, or an MCP server's tool", () => {
    expect(
      registry.refusedAllow(tools({ approval: { ask: ['fs.write', 'shell.*', { tool: 'http.get' }], deny: ['*'] } })),
    ).toBeUndefined();
    expect(
      registry.refusedAllow(
        tools({
          mcp: { gh: { url: 'https://mcp.example.com/mcp' } },
          approval: { ask: ['gh.create_issue'], deny: [] },
        }),
      ),
    ).toBeUndefined();
    expect(registry.refusedAllow(tools({ approval: { ask: ['nope.*'], deny: [] } }))).toMatch(/'nope\.\*'/);
  });
});
