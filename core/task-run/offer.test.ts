import { getGuide } from '../guides';
import { offeredNames, offeredPrompt, offeredSpecs } from './offer';
import { configOf } from './test-support';

const listed = [{ name: 'my.tool', description: 'a worker tool', parameters: { type: 'object' } }];

describe('the tools a task offers', () => {
  it('are the built-in tools tools.allow names while the worker has listed none', () => {
    const config = configOf({ tools: { allow: ['fs.read', 'shell.run'] } });
    expect(offeredNames(undefined, config)).toEqual(['fs.read', 'shell.run']);
    expect(offeredSpecs(undefined, config).map((t) => t.name)).toEqual(['fs.read', 'shell.run']);
  });

  it("are the worker's list once it gave one", () => {
    const config = configOf();
    expect(offeredNames(listed, config)).toEqual(['my.tool']);
    expect(offeredSpecs(listed, config)).toBe(listed);
  });

  it("are named in a new task's system prompt, with the commands shell.run starts that the worker resolved", () => {
    const config = configOf();
    const prompt = offeredPrompt(getGuide('pain'), config, listed, ['git', 'npm']);
    const withAllow = { ...config, tools: { ...config.tools, shellAllow: ['git', 'npm'] } };
    expect(prompt).toEqual({ role: 'system', text: getGuide('pain').systemPrompt(withAllow, ['my.tool']) });
    expect(prompt.text).toContain('Tools: my.tool.');
    expect(prompt.text).toContain('shell.run starts only these commands: git, npm.');
  });
});
