import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../core/errors';
import { projectRoot } from '../dev/paths';
import { checkWorkspaceRoots, toolWorkerConfigFromEnv, workerConfigFromEnv } from './env';

describe('workerConfigFromEnv', () => {
  it('defaults to the local dev server, the openstarry queue and a workspaces folder of its own as the root', () => {
    const c = workerConfigFromEnv({}, '/srv/work');
    expect(c.temporal).toEqual({ address: '127.0.0.1:7233', namespace: 'default' });
    expect(c.taskQueue).toBe('openstarry');
    // Never the working directory nor the project folder: they hold the worker's code.
    expect(c.policy.roots).toEqual([path.join(projectRoot(), 'workspaces')]);
    // Scripts and models are read from where it runs and from the project (its examples, .tools/models).
    expect(c.policy.llmDirs).toEqual(['/srv/work', projectRoot()]);
    expect(c.rootsFrom).toBeUndefined();
    expect(c.alerts).toEqual({ webhookUrl: undefined, snsTopicArn: undefined, uiUrl: undefined });
    expect(c.workflowBundlePath).toBeUndefined();
  });

  it('reads every part from its variables, empty ones counting as unset', () => {
    const c = workerConfigFromEnv(
      {
        TEMPORAL_ADDRESS: 'ns.tmprl.cloud:7233',
        TEMPORAL_NAMESPACE: 'ns',
        TEMPORAL_API_KEY: 'key',
        STARRY_TASK_QUEUE: 'q1',
        STARRY_WORKSPACE_ROOTS: 'a:/abs',
        STARRY_TOOLS_ALLOW_ROOT: '1',
        STARRY_ALERT_WEBHOOK: 'https://hooks.example.com/x',
        STARRY_ALERT_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:alerts',
        STARRY_UI_URL: '',
        OPENAI_API_KEY: 'sk-test',
        STARRY_LOCAL_THREADS: '3',
      },
      '/srv',
    );
    expect(c.temporal).toEqual({ address: 'ns.tmprl.cloud:7233', namespace: 'ns', apiKey: 'key', tls: true });
    expect(c.taskQueue).toBe('q1');
    expect(c.policy).toMatchObject({ roots: [path.resolve('/srv/a'), '/abs'], allowRoot: true });
    expect(c.alerts).toEqual({
      webhookUrl: 'https://hooks.example.com/x',
      snsTopicArn: 'arn:aws:sns:eu-west-1:123456789012:alerts',
      uiUrl: undefined,
    });
    expect(c.llm.openai?.env).toMatchObject({ OPENAI_API_KEY: 'sk-test', STARRY_LOCAL_THREADS: '3' });
  });

  it("lets a task name its own LLM endpoint, loopback servers only without a policy, and the policy's hosts with one", () => {
    expect(workerConfigFromEnv({}, '/srv').policy.llmAllow).toEqual([
      '127.0.0.1:*',
      'localhost:*',
      '[::1]:*',
      'api.openai.com',
    ]);
    expect(workerConfigFromEnv({ OPENAI_BASE_URL: 'https://llm.internal:8443/v1' }, '/srv').policy.llmAllow).toContain(
      'llm.internal:8443',
    );
    const withPolicy = workerConfigFromEnv({
      STARRY_WORKER_POLICY: '{"roots": ["/data"], "llmAllow": ["vllm.internal:8000"]}',
    }).policy;
    expect(withPolicy.llmAllow).toEqual(['vllm.internal:8000', 'api.openai.com']);
    expect(() => workerConfigFromEnv({ OPENAI_BASE_URL: 'not a url' })).toThrow(
      /OPENAI_BASE_URL: must be an http\(s\) URL/,
    );
  });

  it('takes the policy inline and refuses an invalid one naming the field', () => {
    expect(
      workerConfigFromEnv({ STARRY_WORKER_POLICY: '{"roots": ["/data"], "shellAllow": ["ls"]}' }).policy,
    ).toMatchObject({ roots: ['/data'], shellAllow: ['ls'] });
    expect(() => workerConfigFromEnv({ STARRY_WORKER_POLICY: '{"roots": ["relative"]}' })).toThrow(
      /STARRY_WORKER_POLICY[\s\S]*roots/,
    );
    expect(() => workerConfigFromEnv({ STARRY_PRICING: '/no/such/prices.json' })).toThrow(
      /Cannot read STARRY_PRICING file \/no\/such\/prices.json/,
    );
    expect(() =>
      workerConfigFromEnv({ STARRY_PRICING: '{"openai:gpt-4o": {"inputPerMTok": 2.5, "outputPerMTok": -10}}' }),
    ).toThrow(
      /Invalid STARRY_PRICING:[\s\S]*openai:gpt-4o\.cachedInputPerMTok: missing[\s\S]*openai:gpt-4o\.outputPerMTok: must be >= 0/,
    );
    expect(
      workerConfigFromEnv({
        STARRY_PRICING: '{"openai:gpt-4o": {"inputPerMTok": 2.5, "cachedInputPerMTok": 1.25, "outputPerMTok": 10}}',
      }).pricing,
    ).toEqual({ 'openai:gpt-4o': { inputPerMTok: 2.5, cachedInputPerMTok: 1.25, outputPerMTok: 10 } });
    expect(() => workerConfigFromEnv({ STARRY_WORKER_POLICY: '/no/such/policy.json' })).toThrow(
      /Cannot read STARRY_WORKER_POLICY file \/no\/such\/policy.json/,
    );
  });

  it('takes STARRY_MAX_CONCURRENT_WORKFLOW_TASKS workflow tasks at once, 2 or more, and the worker its own default without it', () => {
    expect(
      workerConfigFromEnv({ STARRY_MAX_CONCURRENT_WORKFLOW_TASKS: '8' }, '/srv').maxConcurrentWorkflowTaskExecutions,
    ).toBe(8);
    expect(workerConfigFromEnv({}, '/srv')).not.toHaveProperty('maxConcurrentWorkflowTaskExecutions');
    for (const bad of ['1', '0', '2.5', 'many'])
      expect(() => workerConfigFromEnv({ STARRY_MAX_CONCURRENT_WORKFLOW_TASKS: bad }, '/srv')).toThrow(
        /STARRY_MAX_CONCURRENT_WORKFLOW_TASKS: must be a whole number >= 2/,
      );
  });

  it('sizes the sticky cache from STARRY_MAX_CACHED_WORKFLOWS, 0 included, and the SDK does without it', () => {
    expect(workerConfigFromEnv({ STARRY_MAX_CACHED_WORKFLOWS: '800' }, '/srv').maxCachedWorkflows).toBe(800);
    expect(workerConfigFromEnv({ STARRY_MAX_CACHED_WORKFLOWS: '0' }, '/srv').maxCachedWorkflows).toBe(0);
    expect(workerConfigFromEnv({}, '/srv')).not.toHaveProperty('maxCachedWorkflows');
    for (const bad of ['lots', '-1', '2.5'])
      expect(() => workerConfigFromEnv({ STARRY_MAX_CACHED_WORKFLOWS: bad }, '/srv')).toThrow(
        /STARRY_MAX_CACHED_WORKFLOWS: must be a whole number >= 0/,
      );
  });

  it('names every invalid variable at once, with what it should hold', () => {
    let err: unknown;
    try {
      workerConfigFromEnv({
        STARRY_TOOLS_ALLOW_ROOT: 'yes',
        STARRY_ALERT_WEBHOOK: 'ftp://x',
        STARRY_ALERT_TOPIC_ARN: 'alerts',
        STARRY_LOCAL_THREADS: '0',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).toMatch(/^Invalid worker environment/);
    expect(message).toMatch(/STARRY_TOOLS_ALLOW_ROOT: must be 0 or 1/);
    expect(message).toMatch(/STARRY_ALERT_WEBHOOK: must be an http\(s\) URL/);
    expect(message).toMatch(/STARRY_ALERT_TOPIC_ARN: must be an SNS topic ARN/);
    expect(message).toMatch(/STARRY_LOCAL_THREADS/);
  });

  it('accepts the transcript store variables and refuses a bucket that S3 would not name', () => {
    expect(() =>
      workerConfigFromEnv({
        STARRY_STORE_BUCKET: 'starry-transcripts.eu-1',
        STARRY_STORE_PREFIX: 'blobs/',
        STARRY_STORE_DIR: '/var/lib/starry/blobs',
      }),
    ).not.toThrow();
    const refusal = (bucket: string) => {
      try {
        workerConfigFromEnv({ STARRY_STORE_BUCKET: bucket });
        return 'accepted';
      } catch (err) {
        return (err as Error).message.match(/STARRY_STORE_BUCKET: .*/)?.[0];
      }
    };
    const bad = [
      'Starry',
      'ab',
      's3://starry',
      'starry..transcripts',
      '192.168.1.1',
      '-starry',
      'starry_transcripts',
      'xn--starry',
    ];
    expect(bad.map(refusal)).toEqual(bad.map(() => expect.stringMatching(/must be an S3 bucket name/)));
  });
});

describe('STARRY_TOOL_TASK_QUEUE', () => {
  it('gives the tools a task queue of their own only when it differs from the task queue', () => {
    expect(workerConfigFromEnv({}, '/srv').toolTaskQueue).toBeUndefined();
    expect(
      workerConfigFromEnv({ STARRY_TASK_QUEUE: 'q', STARRY_TOOL_TASK_QUEUE: 'q' }, '/srv').toolTaskQueue,
    ).toBeUndefined();
    expect(workerConfigFromEnv({ STARRY_TOOL_TASK_QUEUE: 'tools' }, '/srv')).toMatchObject({
      taskQueue: 'openstarry',
      toolTaskQueue: 'tools',
    });
  });

  it('a tool worker refuses to start with an LLM key in its environment, naming each key', () => {
    const start = () =>
      toolWorkerConfigFromEnv(
        { STARRY_TOOL_TASK_QUEUE: 'tools', OPENAI_API_KEY: 'sk-x', GEMINI_API_KEY: 'g', GOOGLE_API_KEY: '' },
        '/srv',
      );
    expect(start).toThrow(ConfigError);
    expect(start).toThrow(/holds no LLM key, but OPENAI_API_KEY, GEMINI_API_KEY are set/);
  });

  it('a tool worker needs a tool task queue other than the task queue, and says how to set one', () => {
    expect(() => toolWorkerConfigFromEnv({}, '/srv')).toThrow(/STARRY_TOOL_TASK_QUEUE is not set.*openstarry-tools/);
    expect(() => toolWorkerConfigFromEnv({ STARRY_TOOL_TASK_QUEUE: 'openstarry' }, '/srv')).toThrow(
      /is the task queue \(openstarry\)/,
    );
    expect(toolWorkerConfigFromEnv({ STARRY_TOOL_TASK_QUEUE: 'tools' }, '/srv').toolTaskQueue).toBe('tools');
  });
});

describe('the roots a worker that runs tool calls starts with', () => {
  const base = () => mkdtempSync(path.join(os.tmpdir(), 'starry-roots-'));

  it('pass when each configured root is a directory the worker can write, and the check leaves nothing there', async () => {
    const root = base();
    await expect(
      checkWorkspaceRoots(workerConfigFromEnv({ STARRY_WORKSPACE_ROOTS: root }, '/srv')),
    ).resolves.toBeUndefined();
    expect(readdirSync(root)).toEqual([]);
  });

  it('refuse the start naming a missing root and a file, and the variable they came from', async () => {
    const dir = base();
    writeFileSync(path.join(dir, 'file'), '');
    const config = workerConfigFromEnv({ STARRY_WORKSPACE_ROOTS: `${dir}/missing:${dir}/file` }, '/srv');
    expect(config.rootsFrom).toBe('STARRY_WORKSPACE_ROOTS');
    const start = checkWorkspaceRoots(config);
    await expect(start).rejects.toThrow(ConfigError);
    await expect(start).rejects.toThrow(
      `(STARRY_WORKSPACE_ROOTS) cannot be used:\n  - ${dir}/missing: does not exist\n  - ${dir}/file: is not a directory`,
    );
  });

  it('name the policy when its roots are the unusable ones', async () => {
    const missing = path.join(base(), 'efs');
    const config = workerConfigFromEnv({ STARRY_WORKER_POLICY: JSON.stringify({ roots: [missing] }) }, '/srv');
    await expect(checkWorkspaceRoots(config)).rejects.toThrow(
      new RegExp(
        `\\(STARRY_WORKER_POLICY\\) cannot be used:\\n  - ${missing}: does not exist[^]*the roots of STARRY_WORKER_POLICY`,
      ),
    );
  });

  it('are not checked when they are the defaults (the working directory and the project folder)', async () => {
    const config = workerConfigFromEnv({}, '/no/such/dir');
    expect(config.rootsFrom).toBeUndefined();
    await expect(checkWorkspaceRoots(config)).resolves.toBeUndefined();
  });
});
