import { childEnv, isSecretName, redactSecrets } from './child-env';

const WORKER_ENV = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/starry',
  LANG: 'C.UTF-8',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  TEMPORAL_API_KEY: 'tmprl-key-0123456789',
  TEMPORAL_TLS_CERT: '/etc/tls/cert.pem',
  OPENAI_API_KEY: 'sk-live-0123456789abcdef',
  GEMINI_API_KEY: 'gem-0123456789',
  AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE0123',
  AWS_SECRET_ACCESS_KEY: 'aws-secret-0123456789',
  AWS_SESSION_TOKEN: 'aws-session-0123456789',
  GOOGLE_APPLICATION_CREDENTIALS: '/etc/gcp/sa.json',
  STARRY_API_JWT_SECRET: 'jwt-secret-0123456789abcdef',
  OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=hc-0123456789',
  NODE_LLAMA_CPP_GPU: 'false',
  MCP_TOKEN: 'mcp-token-0123456789',
};

describe('what a helper process gets of the worker’s environment', () => {
  it('tells a credential by its name', () => {
    for (const name of [
      'OPENAI_API_KEY',
      'STARRY_API_JWT_SECRET',
      'AWS_SESSION_TOKEN',
      'GOOGLE_APPLICATION_CREDENTIALS',
    ])
      expect([name, isSecretName(name)]).toEqual([name, true]);
    for (const name of ['PATH', 'TEMPORAL_ADDRESS', 'STARRY_TASK_QUEUE', 'LANG'])
      expect([name, isSecretName(name)]).toEqual([name, false]);
  });

  it('gives the base variables and those named, never a credential, whatever prefix was asked for', () => {
    expect(childEnv(WORKER_ENV, ['NODE_LLAMA_CPP_*'], { NODE_LLAMA_CPP_SKIP_DOWNLOAD: 'true' })).toEqual({
      PATH: '/usr/bin:/bin',
      HOME: '/home/starry',
      LANG: 'C.UTF-8',
      NODE_LLAMA_CPP_GPU: 'false',
      NODE_LLAMA_CPP_SKIP_DOWNLOAD: 'true',
    });
    expect(childEnv(WORKER_ENV, ['TEMPORAL_*', 'AWS_*', 'OTEL_*', 'MCP_TOKEN'])).toEqual({
      PATH: '/usr/bin:/bin',
      HOME: '/home/starry',
      LANG: 'C.UTF-8',
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
    });
  });

  it('shows no credential’s value in what a helper printed', () => {
    const printed = `boom: ${JSON.stringify(WORKER_ENV)}`;
    const shown = redactSecrets(printed, WORKER_ENV);
    for (const [name, value] of Object.entries(WORKER_ENV))
      if (isSecretName(name)) expect([name, shown.includes(value)]).toEqual([name, false]);
    expect(shown).toContain('"OPENAI_API_KEY":"[OPENAI_API_KEY]"');
    expect(shown).toContain('"PATH":"/usr/bin:/bin"');
    // A short value is left: it would match ordinary words.
    expect(redactSecrets('a b c', { SOME_KEY: 'b' })).toBe('a b c');
  });
});
