/**
 * Where a task's workspace paths are checked: on this machine when Temporal is here (the embedded
 * default), on the tool workers when it is elsewhere.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../core/config';
import { isLocalAddress, loadAgentConfig } from './load-config';

const here = mkdtempSync(path.join(os.tmpdir(), 'starry-load-config-'));
const REMOTE = 'my-ns.a1b2c.tmprl.cloud:7233';

describe('a task config with Temporal on this machine', () => {
  it('resolves a workspace against the working directory and refuses one that does not exist here', () => {
    const config = loadAgentConfig({ workspace: ['.'], llm: 'openai:gpt-4o-mini' }, here, '127.0.0.1:7233');
    expect(config.workspace).toEqual([here]);
    expect(() => loadAgentConfig({ workspace: ['typo'], llm: 'openai:gpt-4o-mini' }, here, 'localhost:7233')).toThrow(
      new ConfigError(`workspace root ${path.join(here, 'typo')} does not exist: create it, or pass --workspace DIR`),
    );
  });
});

describe('a task config with Temporal elsewhere', () => {
  it('passes an absolute workspace to the tool workers as given, whether or not it exists on this machine', () => {
    const config = loadAgentConfig({ workspace: ['/workspaces/a1/'], llm: 'openai:gpt-4o-mini' }, here, REMOTE);
    expect(config.workspace).toEqual(['/workspaces/a1/']);
  });

  it("refuses a relative workspace (this machine's directory means nothing to the tool workers), saying to give it absolute", () => {
    expect(() => loadAgentConfig({ workspace: ['repo'], llm: 'openai:gpt-4o-mini' }, here, REMOTE)).toThrow(
      /workspace repo is relative, but Temporal \(my-ns\.a1b2c\.tmprl\.cloud:7233\) is not on this machine: .*give it absolute \(e\.g\. --workspace \/workspaces\/a1\)/,
    );
    // The default workspace (./workspace) is relative too: a task for remote workers names its own.
    expect(() => loadAgentConfig({ llm: 'openai:gpt-4o-mini' }, here, REMOTE)).toThrow(
      /workspace \.\/workspace is relative/,
    );
  });
});

describe('isLocalAddress', () => {
  it.each([
    ['127.0.0.1:7233', true],
    ['localhost:7233', true],
    ['[::1]:7233', true],
    ['127.0.0.2:17233', true],
    [REMOTE, false],
    ['temporal.internal:7233', false],
    ['10.0.0.5:7233', false],
  ])('%s → %s', (address, local) => expect(isLocalAddress(address)).toBe(local));
});
