/**
 * The docs' picture of a real trace (docs/img/trace-eperm.png), taken as a person would see it:
 * `starry dev --otel` on a dev server of its own (fresh state folder, free ports), the README's demo task
 * (examples/eperm, the scripted controller) run against it with `starry run`, and the trace page the dev
 * process names for the task, opened in chromium with the refused read's details shown. Not a test.
 *
 * ```sh
 * npm run build && node lib/bench/trace-screenshot.js [--out docs/img/trace-eperm.png]
 * ```
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../dev/dev-server';
import { projectRoot } from '../dev/paths';
import { launchChromium } from './chromium';

const root = projectRoot();
const bin = path.join(root, 'bin', 'starry.js');

/** A `starry` process whose stderr we can wait on. */
function starry(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ...env } });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const until = async (re: RegExp, what: string, seconds = 90): Promise<RegExpExecArray> => {
    for (let i = 0; i < seconds * 10; i++) {
      const m = re.exec(stderr);
      if (m) return m;
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no ${what} from \`starry ${args.join(' ')}\`; its stderr:\n${stderr}`);
  };
  return { child, exited, until };
}

async function main() {
  const at = process.argv.indexOf('--out');
  const out = path.resolve(at > 0 ? process.argv[at + 1]! : path.join(root, 'docs/img/trace-eperm.png'));
  const state = mkdtempSync(path.join(os.tmpdir(), 'starry-trace-shot-'));
  const port = await freePort();
  const env = {
    STARRY_STATE_DIR: state,
    STARRY_TASK_QUEUE: 'trace-screenshot',
    TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
    OTEL_EXPORTER_PROMETHEUS_PORT: String(await freePort()),
  };
  const dev = starry(['dev', '--otel', '--port', String(port), '--otel-port', '0', '--api-port', '0'], env);
  const browser = await launchChromium();
  try {
    await dev.until(/worker running on task queue/, 'start-up lines');
    const run = starry(
      ['run', 'Tell me what /root/secret.txt says.', '--agent', 'demo', '--config', 'examples/eperm/agent.json'],
      env,
    );
    if ((await run.exited) !== 0) throw new Error('the demo task did not complete');
    const [, url] = await dev.until(/trace of agent-demo-task-1 \(COMPLETED\): (\S+)\n/, "the task's trace line");
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
    await page.goto(url!);
    await page.locator('summary.row', { hasText: 'execute_tool fs.read' }).first().click();
    await page.screenshot({ path: out, fullPage: true });
    process.stdout.write(`wrote ${path.relative(process.cwd(), out)} from ${url}\n`);
  } finally {
    await browser.close();
    dev.child.kill('SIGINT');
    await dev.exited;
    rmSync(state, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
