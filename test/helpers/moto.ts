/**
 * A local `moto` server (installed by scripts/setup.sh into .tools/moto): AWS's real wire protocols
 * (Secrets Manager, SNS, SQS) for the AWS SDK v3 clients, with no account and no network.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from '../../dev/dev-server';
import { projectRoot } from '../../dev/paths';

export interface Moto {
  endpoint: string;
  /** Environment for AWS SDK v3 clients to use it (credentials are moto's dummies). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startMoto(): Promise<Moto> {
  const port = await freePort();
  const child = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], {
    env: { ...process.env, PYTHONPATH: path.join(projectRoot(), '.tools', 'moto') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + String(d)).slice(-2000)));
  const endpoint = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${endpoint}/moto-api/`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 300 || child.exitCode !== null) throw new Error(`moto did not start (run \`npm run setup\`): ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    endpoint,
    env: {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'testing',
      AWS_SECRET_ACCESS_KEY: 'testing',
    },
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
    },
  };
}
