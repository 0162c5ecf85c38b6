/**
 * The dev server's CPU by function while a benchmark phase runs (`throughput --profile-server`).
 *
 * The Temporal CLI is a stripped Go binary and its dev server has no pprof endpoint, so Linux `perf`
 * samples the whole machine (`-a`, so threads the Go runtime starts mid-run are sampled too) and only
 * the server's pid is kept; Go's own `go tool addr2line` names each address from the binary's
 * `.gopclntab`, which stripping keeps. Needs `perf` (Debian's `linux-perf`), `go`, and the right to
 * sample (root, or `kernel.perf_event_paranoid` <= 0).
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync, realpathSync } from 'node:fs';
import { differing } from './stack';

/** Samples a second on each CPU: enough for a phase of a few seconds, few enough for `perf script`. */
const FREQUENCY = 499;

export interface ServerProfile {
  /** Samples of the server's process, and per function the samples it was on the stack (once per sample) or on top. */
  samples: number;
  inclusive: Map<string, number>;
  self: Map<string, number>;
}

export interface ServerProfiler {
  stop(): Promise<ServerProfile>;
}

/** Why the profile cannot be taken on this machine, or undefined when it can. */
export function cannotProfile(): string | undefined {
  for (const [tool, args] of [
    ['perf', ['--version']],
    ['go', ['version']],
  ] as const) {
    if (spawnSync(tool, args).status !== 0)
      return `--profile-server needs \`${tool}\` on the PATH (${tool === 'perf' ? 'apt install linux-perf' : 'a Go toolchain'})`;
  }
  return undefined;
}

/** Start sampling; `stop()` ends it and attributes the samples of `pid` (the dev server, running `binary`). */
export async function profileServer(pid: number, binary: string, file: string): Promise<ServerProfiler> {
  const perf: ChildProcess = spawn('perf', ['record', '-F', String(FREQUENCY), '-g', '-a', '-q', '-o', file], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  perf.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => perf.on('exit', resolve));
  // perf writes its file's header once it samples.
  for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 20));
  if (!existsSync(file) || perf.exitCode !== null) {
    perf.kill('SIGINT');
    throw new Error(
      `perf record did not start (sampling needs root or kernel.perf_event_paranoid <= 0): ${stderr.trim()}`,
    );
  }
  return {
    async stop() {
      perf.kill('SIGINT');
      await exited;
      return attribute(file, pid, binary);
    },
  };
}

function attribute(file: string, pid: number, binary: string): ServerProfile {
  const script = execFileSync('perf', ['script', '-i', file, '--pid', String(pid), '-F', 'ip,dso'], {
    maxBuffer: 2 ** 30,
    stdio: ['ignore', 'pipe', 'ignore'],
  }).toString();
  const path = realpathSync(binary);
  // A sample is its frames, innermost first, one a line; a blank line ends it.
  type Frame = bigint | string;
  const stacks: Frame[][] = [];
  let frames: Frame[] = [];
  for (const line of script.split('\n')) {
    const m = /^\s*([0-9a-f]+) \((.*)\)$/.exec(line);
    if (!m) {
      if (frames.length) stacks.push(frames);
      frames = [];
      continue;
    }
    const [, hex, dso] = m as unknown as [string, string, string];
    frames.push(dso === path ? BigInt(`0x${hex}`) : dso.includes('kernel') ? '[kernel]' : `[${dso}]`);
  }
  if (frames.length) stacks.push(frames);

  // This perf prints the binary's frames relative to its first loaded segment: addresses below that
  // segment's start say so.
  const base = loadBase(binary);
  const shift = stacks.some((s) => s.some((f) => typeof f === 'bigint' && f < base)) ? base : 0n;
  const key = (f: Frame) => (typeof f === 'string' ? f : `0x${(f + shift).toString(16)}`);
  const addresses = [...new Set(stacks.flatMap((s) => s.filter((f) => typeof f === 'bigint').map(key)))];
  const names = new Map<string, string>();
  if (addresses.length) {
    // addr2line answers two lines per address: the function, then file:line.
    const out = execFileSync('go', ['tool', 'addr2line', binary], { input: addresses.join('\n'), maxBuffer: 2 ** 30 })
      .toString()
      .split('\n');
    addresses.forEach((a, i) => names.set(a, out[2 * i] ?? '?'));
  }
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const s of stacks) {
    const fns = s.map((f) => names.get(key(f)) ?? key(f));
    add(self, fns[0] as string);
    for (const n of new Set(fns)) add(inclusive, n);
  }
  return { samples: stacks.length, inclusive, self };
}

/** The virtual address of an ELF64 executable's first loadable segment (0x400000 for a Go binary). */
function loadBase(binary: string): bigint {
  const fd = openSync(binary, 'r');
  try {
    const header = Buffer.alloc(64);
    readSync(fd, header, 0, 64, 0);
    const phoff = Number(header.readBigUInt64LE(0x20));
    const phentsize = header.readUInt16LE(0x36);
    const phnum = header.readUInt16LE(0x38);
    const ph = Buffer.alloc(phentsize * phnum);
    readSync(fd, ph, 0, ph.length, phoff);
    for (let i = 0; i < phnum; i++) {
      const at = i * phentsize;
      if (ph.readUInt32LE(at) === 1 /* PT_LOAD */) return ph.readBigUInt64LE(at + 16) - ph.readBigUInt64LE(at + 8);
    }
    return 0n;
  } finally {
    closeSync(fd);
  }
}

/**
 * Where the server's CPU went, floor against project, in ms a tick: the server's request handlers and
 * queue executors (what each kind of work costs), then the functions on top of the stack that differ most.
 */
export function profileRows(
  name: string,
  floor: ServerProfile,
  floorTicks: number,
  project: ServerProfile,
  projectTicks: number,
): string[] {
  const scale = 1000 / FREQUENCY; // samples → ms
  const entry =
    /\.\((\*(historyEngineImpl|matchingEngineImpl|WorkflowHandler|visibilityQueueTaskExecutor|transferQueueActiveTaskExecutor|timerQueueActiveTaskExecutor|outboundQueueActiveTaskExecutor))\)\.\w+$/;
  const rows = (
    f: Map<string, number>,
    p: Map<string, number>,
    label: string,
    opts: { n: number; pick?: (k: string) => boolean },
  ) =>
    differing(f, floorTicks, p, projectTicks, { ...opts, scale }).map(
      (r) =>
        `| ${name} | ${label} | ${r.key.replace(/^go\.temporal\.io\/server\//, '')} | ${r.floor.toFixed(2)} | ${r.project.toFixed(2)} |`,
    );
  return [
    `| ${name} | all | the server process | ${((floor.samples * scale) / floorTicks).toFixed(2)} | ${((project.samples * scale) / projectTicks).toFixed(2)} |`,
    ...rows(floor.inclusive, project.inclusive, 'handler', { n: 14, pick: (k) => entry.test(k) }),
    ...rows(floor.self, project.self, 'self', { n: 10 }),
  ];
}
