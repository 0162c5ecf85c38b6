import { parseAgentConfig } from '../config';
import { basePrompt, FINISH_INSTRUCTION, TOOL_NAMES } from './base-prompt';

const framing = { role: 'ROLE LINE.', failures: 'FAILURE FRAMING.' };

describe('basePrompt', () => {
  it('lists every workspace root on its own line', () => {
    const agent = parseAgentConfig({ workspace: ['/w', '/data/shared'] }, 'scripted:/x.json');
    const promptLines = basePrompt(agent, framing).split('\n');
    const at = promptLines.indexOf('Permitted workspace roots:');
    expect(at).toBeGreaterThanOrEqual(0);
    expect(promptLines.slice(at + 1, at + 3)).toEqual(['/w', '/data/shared']);
  });

  it('names the user as the source of the goal, the tools, and their confinement', () => {
    const prompt = basePrompt(parseAgentConfig({ workspace: ['/w'] }, 'scripted:/x.json'), framing);
    expect(prompt).toContain('Your goal comes from the user');
    expect(prompt).toContain(`Tools: ${TOOL_NAMES.join(', ')}.`);
    expect(prompt).toContain('confined to the permitted workspace roots');
  });

  it('states the allowed shell commands and http hosts from the config', () => {
    const agent = parseAgentConfig(
      { workspace: ['/w'], tools: { shellAllow: ['ls'], httpAllow: ['example.com'] } },
      'scripted:/x.json',
    );
    const prompt = basePrompt(agent, framing);
    expect(prompt).toContain('shell.run starts only these commands: ls.');
    expect(prompt).toContain('http.get reaches only these hosts: example.com.');
  });

  it('says plainly when no http host is allowed', () => {
    const prompt = basePrompt(parseAgentConfig({ workspace: ['/w'] }, 'scripted:/x.json'), framing);
    expect(prompt).toContain('http.get reaches only these hosts: (none).');
  });

  it('places the guide framing and ends with the finish instruction', () => {
    const prompt = basePrompt(parseAgentConfig({ workspace: ['/w'] }, 'scripted:/x.json'), framing);
    expect(prompt.startsWith('ROLE LINE.')).toBe(true);
    expect(prompt).toContain('it comes back to you as the tool result. FAILURE FRAMING.');
    expect(prompt.endsWith(FINISH_INSTRUCTION)).toBe(true);
    expect(FINISH_INSTRUCTION).toBe('When the goal is done, answer with your final answer and no tool call.');
  });
});
