/**
 * `shell.run`: start an allow-listed program (no shell, so no pipes, globs or expansions) in a working
 * directory inside the workspace, with a timeout, capped output and cancellation. The program runs
 * confined (confine.ts): the path check on its arguments only gives a clear error early; the boundary
 * is the sandbox, where nothing outside the workspace exists.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { ToolArgs } from '../../core/tools';
import { DEFAULT_LIMITS } from '../../core/worker-policy';
import type { ToolContext } from './context';
import { SANDBOX_PATH, confinedSpawn, onSandboxPath, reapOrphanedSandboxes, type Sandbox } from './confine';
import { WorkspaceDisk, capError, overError } from './disk';
import { limitError, limitOfExit } from './limits';
import { resolveInWorkspace } from './sandbox';
import { ToolError, nodeCode, toToolError } from '../../core/errors/activity';

const SOURCE = 'shell.run';
/** Characters a shell would interpret; without a shell they would reach the program literally. */
const SHELL_SYNTAX = /[|&;<>()$`\\"'*?~{}\n]/;

/** Result of `shell.run`. A non-zero exit code is still a result: the model reads it. */
export interface ShellResult {
  exitCode: number | null;
  /** Set when the program was ended by a signal it did not get from us. */
  signal?: string;
  stdout: string;
  stderr: string;
}

/**
 * Run `command` with `args`. Killed after the smaller of `timeoutMs` and the tool timeout (ETIMEDOUT,
 * transient) or when `ctx.signal` aborts (the abort reason is rethrown: cancellation is not pain). A
 * program that hits a resource limit we can see (its cgroup's process or memory cap, SIGXCPU, SIGXFSZ,
 * the workspace or its tenant's space grown over its cap while it runs or afterwards, disk.ts) is E_LIMIT
 * naming it; any other hit shows in its own output.
 *
 * ```ts
 * await runShell({ command: 'ls', args: ['-la'] }, ctx) // { exitCode: 0, stdout: '...', stderr: '' }
 * ```
 */
export async function runShell(args: ToolArgs['shell.run'], ctx: ToolContext): Promise<ShellResult> {
  const { command, argv } = splitCommand(args);
  const allow = ctx.tools.shellAllow;
  if (!allow.includes(command)) {
    throw ToolError.of({
      code: 'EPERM',
      source: SOURCE,
      message: `EPERM: command not allowed: '${command}'`,
      suggestion: `Allowed commands: ${allow.length ? allow.join(', ') : '(none)'}. Pass the program in command and each argument in args.`,
    });
  }
  const cwd = await resolveInWorkspace(ctx.workspace, args.cwd ?? (ctx.roots[0] as string), {
    mustExist: true,
    source: SOURCE,
  });
  if (!(await fs.stat(cwd)).isDirectory()) {
    throw ToolError.of({ code: 'ENOTDIR', source: SOURCE, message: `ENOTDIR: not a directory, cwd '${args.cwd}'` });
  }
  await checkPathArguments(argv, cwd, ctx);
  const timeoutMs = Math.min(args.timeoutMs ?? ctx.timeoutMs, ctx.timeoutMs);
  const roots = await ctx.workspace.realRoots();
  // A small environment: the worker's own (API keys) must not reach the program.
  const env = { PATH: SANDBOX_PATH.join(':'), HOME: roots[0] as string, LANG: 'C.UTF-8' };
  if (!(await onSandboxPath(command, cwd))) {
    throw ToolError.of({ code: 'ENOENT', source: SOURCE, message: `ENOENT: command not found: '${command}'` });
  }
  return runConfined({ command, argv, roots, cwd, env, timeoutMs }, ctx);
}

/**
 * Run an allowed program in its sandbox under the disk caps: the room left under them is the largest
 * file it may write, the file system is watched while it runs (disk.ts `watch`), and the workspace is
 * measured after it ended, whatever the end.
 */
async function runConfined(
  p: { command: string; argv: string[]; roots: string[]; cwd: string; env: Record<string, string>; timeoutMs: number },
  ctx: ToolContext,
): Promise<ShellResult> {
  const { timeoutMs, ...program } = p;
  const { command } = p;
  const limits = ctx.limits ?? DEFAULT_LIMITS;
  // Hard links refused, and the room left under the caps: no one file may take more.
  const disk = await WorkspaceDisk.open({
    roots: p.roots,
    limits,
    source: SOURCE,
    ...(ctx.space ? { space: ctx.space } : {}),
  });
  const room = await disk.room();
  // A sandbox left by a worker killed mid-start must not run on beside this one.
  await reapOrphanedSandboxes();
  const sandbox = await confinedSpawn({
    ...program,
    dropRoot: ctx.dropRoot === true,
    source: SOURCE,
    otherwise: 'drop shell.run from the worker policy',
    limits,
    fileSizeBytes: room.bytes,
  });
  const watch = disk.watch(room.bytes, `'${command}' was stopped:`);
  const ran = await spawnCapped({
    command,
    sandbox,
    timeoutMs,
    cap: ctx.tools.maxOutputBytes,
    signal: ctx.signal,
    stopWith: watch.over,
  }).then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
  watch.stop();
  const released = await sandbox.release();
  // Measured whatever the end, so the tenant's total counts what the program left.
  const over = await disk.check(true);
  if ('error' in ran) throw ran.error;
  const { result } = ran;
  const hit = released ?? limitOfExit(result.exitCode, result.signal ?? null);
  // SIGXFSZ below the policy's file size: the file met the room under a disk cap, not the file size limit.
  if (hit === 'fileSize' && sandbox.fileSizeBytes < limits.fileSizeBytes) {
    const left = ` (${sandbox.fileSizeBytes} bytes were left, the most one file could take)`;
    throw capError(disk.scope, room.cap, `'${command}' hit`, `${left}; ${outcome(result)}`);
  }
  if (hit !== undefined) throw limitError(hit, limits, SOURCE, `'${command}' hit`, `; ${outcome(result)}`);
  if (over) throw overError(disk.scope, over, `after '${command}' ran,`, `; ${outcome(result)}`);
  return result;
}

/** How a program ended and the end of what it said, for an E_LIMIT message. */
function outcome(r: ShellResult): string {
  const tail = (text: string) => (text.length > 500 ? `…${text.slice(-500)}` : text).trim();
  const said = [r.stderr && `stderr: ${tail(r.stderr)}`, r.stdout && `stdout: ${tail(r.stdout)}`]
    .filter(Boolean)
    .join('; ');
  return `it ended with ${r.signal ? `signal ${r.signal}` : `exit code ${r.exitCode}`}${said ? `; ${said}` : ''}`;
}

/**
 * `command` may be a whole simple command line (`ls -la`) when `args` is absent: split on whitespace. Anything
 * a shell would interpret is refused, because it would not do what the model expects.
 */
function splitCommand(args: ToolArgs['shell.run']): { command: string; argv: string[] } {
  const line = args.command.trim();
  if (args.args !== undefined || !/\s/.test(line)) return { command: line, argv: args.args ?? [] };
  if (SHELL_SYNTAX.test(line)) {
    throw ToolError.of({
      code: 'EINVAL',
      source: SOURCE,
      message: `EINVAL: shell syntax is not supported (no shell runs the command): '${line}'`,
      suggestion:
        'Pass the program in command and each argument in args, e.g. {"command": "grep", "args": ["-n", "TODO", "notes.md"]}.',
    });
  }
  const [command = '', ...argv] = line.split(/\s+/);
  return { command, argv };
}

/**
 * Defence in depth: every argument that could name a path (options' `=value` included) is resolved
 * against `cwd` and must stay inside the workspace, so an allowed `cat` cannot read what fs.read may
 * not (`/etc/passwd`, `../x`, a symlink pointing out). Plain words resolve inside `cwd` and pass.
 */
async function checkPathArguments(argv: string[], cwd: string, ctx: ToolContext): Promise<void> {
  for (const arg of argv) {
    if (arg.startsWith('-') && !arg.includes('=')) continue;
    const value = arg.startsWith('-') ? arg.slice(arg.indexOf('=') + 1) : arg;
    // Text that cannot be a path (empty, multi-line, longer than PATH_MAX) is left to the program.
    if (value === '' || value.includes('\n') || value.length > 4096) continue;
    await resolveInWorkspace(ctx.workspace, path.resolve(cwd, value), { mustExist: false, source: SOURCE });
  }
}

interface SpawnOptions {
  command: string;
  sandbox: Sandbox;
  timeoutMs: number;
  cap: number;
  signal?: AbortSignal;
  /** Settles with the error that stops the program (a disk cap met while it runs). */
  stopWith?: Promise<ToolError>;
}

function spawnCapped(o: SpawnOptions): Promise<ShellResult> {
  if (o.signal?.aborted) return Promise.reject(o.signal.reason);
  return new Promise<ShellResult>((resolve, reject) => {
    // detached: its own process group; the sandbox's PID namespace ends with bwrap, taking every child.
    const child = spawn(o.sandbox.file, o.sandbox.args, {
      env: o.sandbox.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let ended: ToolError | { abort: unknown } | undefined;

    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL'); // group already gone or never formed
      }
    };
    const stop = (why: ToolError | { abort: unknown }) => {
      ended ??= why;
      kill();
    };
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      if (ended !== undefined) return;
      size += chunk.length;
      if (size > o.cap) {
        stop(
          ToolError.of({
            code: 'E_OUTPUT_TOO_LARGE',
            source: SOURCE,
            message: `E_OUTPUT_TOO_LARGE: '${o.command}' wrote more than ${o.cap} bytes and was stopped`,
            suggestion:
              'Narrow the output: pass arguments that select less (head -n, grep -m, wc), or read a file with fs.read and maxBytes.',
          }),
        );
        return;
      }
      into.push(chunk);
    };
    child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));

    const timer = setTimeout(
      () =>
        stop(
          ToolError.of({
            code: 'ETIMEDOUT',
            source: SOURCE,
            message: `ETIMEDOUT: '${o.command}' did not finish within ${o.timeoutMs} ms and was killed`,
            suggestion: 'Pass a larger timeoutMs (up to the tool timeout) or run something quicker.',
          }),
        ),
      o.timeoutMs,
    );
    void o.stopWith?.then(stop);
    const onAbort = () => stop({ abort: o.signal?.reason });
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
    };

    child.on('error', (e) => {
      cleanup();
      kill();
      if (nodeCode(e) === 'ENOENT') {
        reject(ToolError.of({ code: 'ENOENT', source: SOURCE, message: `ENOENT: command not found: '${o.command}'` }));
      } else {
        reject(toToolError(e, SOURCE));
      }
    });
    child.on('close', (exitCode, signal) => {
      cleanup();
      if (ended instanceof ToolError) return reject(ended);
      if (ended !== undefined) return reject(ended.abort);
      const result: ShellResult = {
        exitCode,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      };
      if (signal !== null) result.signal = signal;
      resolve(result);
    });
  });
}
