import os from 'node:os';
import path from 'node:path';
import { factsOf, failureOf, llmRequest, quietActivityEnv } from '../../test/helpers/llm-activity';
import { createLocalProvider } from './local';
import { callLlm } from './provider';

// The model itself runs in test/integration/llm-local.test.ts; these cover what fails before it starts.
describe('the local provider', () => {
  it('fails a call for a model file that does not exist, without retrying, naming the setup step', async () => {
    const modelPath = path.join(os.tmpdir(), 'no-such-model.gguf');
    const local = createLocalProvider({ runtimeDir: os.tmpdir() });
    const f = await failureOf(
      quietActivityEnv().run(() =>
        callLlm(local, llmRequest({ llm: { provider: 'local', modelPath } }), { provider: 'local', modelPath }),
      ),
    );
    expect(f).toMatchObject({ type: 'ENOENT', nonRetryable: true });
    expect(factsOf(f)).toMatchObject({ code: 'ENOENT', kind: 'execution', source: 'llm local' });
    expect(factsOf(f).message).toContain(modelPath);
    expect(factsOf(f).message).toContain('npm run setup');
  });

  it('fails a call without retrying when node-llama-cpp is not installed', async () => {
    const modelPath = __filename; // any file that exists: the runtime is checked before the model is read
    const runtimeDir = path.join(os.tmpdir(), 'no-llama-runtime');
    const local = createLocalProvider({ runtimeDir });
    const f = await failureOf(
      quietActivityEnv().run(() =>
        callLlm(local, llmRequest({ llm: { provider: 'local', modelPath } }), { provider: 'local', modelPath }),
      ),
    );
    expect(f).toMatchObject({ type: 'E_UNAVAILABLE', nonRetryable: true });
    expect(factsOf(f).message).toContain(`node-llama-cpp is not installed in ${runtimeDir}`);
  });
});
