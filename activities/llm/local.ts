/**
 * The local model provider (`local:PATH.gguf`): a GGUF model run on the worker's CPU by node-llama-cpp,
 * offline. The model lives in a child process (`local-host.mjs`, an ES module, since node-llama-cpp is
 * ESM-only and the worker is CommonJS), started on the first call for that file and kept for every later
 * call, so a model is loaded once per worker process. Each turn is sampled under a JSON-Schema grammar
 * built from the tool registry (`local-format.ts`): one tool call or one final answer, never free text.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { childEnv, redactSecrets } from '../../core/child-env';
import type { LlmSpec } from '../../core/llm-spec';
import { LlmError } from '../../core/errors/activity';
import { realpathAllowed } from './files';
import type { LlmProvider } from './provider';
import {
  localAnswerSchema,
  localChatHistory,
  parseLocalAnswer,
  type AnswerSchema,
  type LocalChatItem,
} from './local-format';

/** Where `scripts/fetch-model.sh` puts the model that setup fetches (SmolLM2-135M-Instruct, Q4_1). */
export const DEFAULT_LOCAL_MODEL = path.join('.tools', 'models', 'SmolLM2-135M-Instruct.Q4_1.gguf');

const SETUP_HINT =
  'run `npm run setup` (scripts/setup.sh installs node-llama-cpp into .tools/llama/ and fetches SmolLM2-135M-Instruct into .tools/models/)';

/** Settings of the local provider; every field optional (the worker's environment fills in). */
export interface LocalProviderOptions {
  /** The folder holding node-llama-cpp's node_modules; default `STARRY_LLAMA_RUNTIME` or `<project>/.tools/llama`. */
  runtimeDir?: string;
  /** CPU threads for llama.cpp; default `STARRY_LOCAL_THREADS` or one less than the cores (at least 1). */
  threads?: number;
  /** Context size in tokens (capped by the model's own); default `STARRY_LOCAL_CONTEXT` or 8192. */
  contextSize?: number;
  env?: NodeJS.ProcessEnv;
  /** Directories model files may be loaded from (the worker policy's `llmDirs`); default: anywhere. */
  dirs?: string[];
  /** Directories they may never be loaded from: the workspace roots, where tasks write. */
  notIn?: string[];
}

/** What the model process answers for one generation. */
export interface LocalGeneration {
  text: string;
  inputTokens: number;
  outputTokens: number;
  stopReason: string;
  ms: number;
}

type HostMessage =
  | { type: 'ready'; contextSize: number; threads: number }
  | { type: 'fatal'; message: string }
  | { type: 'progress'; id: number; outputTokens: number }
  | ({ type: 'result'; id: number } & LocalGeneration)
  | { type: 'error'; id: number; message: string; aborted: boolean };

/** The project root from this file, in `activities/llm/` or in `lib/activities/llm/`. */
function projectRootFromHere(): string {
  const up = path.resolve(__dirname, '..', '..');
  return path.basename(up) === 'lib' ? path.dirname(up) : up;
}

/** The host script: beside this file when running from source, in the source tree when running from lib/. */
function hostScript(): string {
  const beside = path.join(__dirname, 'local-host.mjs');
  return existsSync(beside) ? beside : path.join(projectRootFromHere(), 'activities', 'llm', 'local-host.mjs');
}

/** A promise that rejects with an AbortError when `signal` aborts (and never settles otherwise). */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise<never>((_, reject) => {
    const fail = () => reject(Object.assign(new Error('the local model call was cancelled'), { name: 'AbortError' }));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
}

/**
 * One model process: started lazily, loads `modelPath` once, then runs generations one at a time. A
 * process that dies fails what it had in flight and is started afresh by the next call.
 */
class LocalModelHost {
  private child?: ChildProcess;
  private ready?: Promise<void>;
  private nextId = 1;
  private stderrTail = '';
  /** Calls in flight, the start included. */
  private busy = 0;
  /** Facts for `localModelProcesses`. */
  readonly stats = { calls: 0, generationMs: 0, loadMs: 0 };
  private readonly pending = new Map<
    number,
    { resolve(g: LocalGeneration): void; reject(e: Error): void; onProgress?(n: number): void }
  >();

  constructor(
    private readonly modelPath: string,
    private readonly settings: { runtimeDir: string; threads: number; contextSize: number },
  ) {}

  /** Start the process and load the model, once; later calls share the same promise. */
  private start(): Promise<void> {
    if (this.ready) return this.ready;
    const started = Date.now();
    this.ready = new Promise<void>((resolve, reject) => {
      const child = fork(hostScript(), [], {
        execArgv: [],
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        serialization: 'json',
        // Only what it needs: no key of the worker's reaches the model process (core/child-env.ts).
        // Belt and braces: node-llama-cpp must never try to download or build a binary at run time.
        env: childEnv(process.env, ['NODE_LLAMA_CPP_*'], { NODE_LLAMA_CPP_SKIP_DOWNLOAD: 'true' }),
      });
      this.child = child;
      child.stderr?.on('data', (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-2000);
      });
      child.on('message', (msg: HostMessage) => {
        if (msg.type === 'ready') {
          this.stats.loadMs = Date.now() - started;
          resolve();
        } else if (msg.type === 'fatal') {
          reject(
            LlmError.of({
              code: 'EINVAL',
              kind: 'execution',
              source: 'llm local',
              message: `cannot load the local model ${this.modelPath}: ${redactSecrets(msg.message, process.env)}`,
            }),
          );
        } else this.onReply(msg);
      });
      child.on('error', (err) => reject(err));
      child.on('exit', (code, signal) => {
        // What it printed goes into the task's error: never with a worker secret in it.
        const tail = redactSecrets(this.stderrTail.trim().slice(-500), process.env);
        const why = `the local model process exited (${signal ?? `code ${code}`})${tail ? `: ${tail}` : ''}`;
        // A crash (out of memory, a fault in llama.cpp) is transient: Temporal retries on a fresh process.
        const error = LlmError.of({ code: 'E_UNAVAILABLE', kind: 'transient', source: 'llm local', message: why });
        reject(error);
        for (const p of this.pending.values()) p.reject(error);
        this.pending.clear();
        if (this.child === child) {
          this.child = undefined;
          this.ready = undefined;
        }
      });
      child.send({ type: 'init', modelPath: this.modelPath, ...this.settings });
      this.updateRef();
    });
    // A failed start is not cached: the next call tries again.
    this.ready.catch(() => {
      this.ready = undefined;
      this.child?.kill();
    });
    return this.ready;
  }

  private onReply(msg: Exclude<HostMessage, { type: 'ready' | 'fatal' }>): void {
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.type === 'progress') return p.onProgress?.(msg.outputTokens);
    this.pending.delete(msg.id);
    if (msg.type === 'result') {
      this.stats.calls++;
      this.stats.generationMs += msg.ms;
      p.resolve(msg);
    } else
      p.reject(
        LlmError.of({
          code: 'EINVAL',
          kind: 'execution',
          source: 'llm local',
          message: `the local model failed: ${redactSecrets(msg.message, process.env)}`,
        }),
      );
  }

  /** Keep the worker alive only while a call is in flight, so an idle model never holds a process open. */
  private updateRef(): void {
    const child = this.child as (ChildProcess & { channel?: { ref(): void; unref(): void } }) | undefined;
    if (!child) return;
    if (this.busy > 0) {
      child.ref();
      child.channel?.ref();
    } else {
      child.unref();
      child.channel?.unref();
    }
  }

  /** Generate one answer. Rejects with an AbortError as soon as `signal` aborts (the process is told to stop). */
  async generate(
    input: { history: LocalChatItem[]; schema: AnswerSchema; maxTokens: number },
    opts: { signal: AbortSignal; onProgress?(outputTokens: number): void },
  ): Promise<LocalGeneration> {
    this.busy++;
    try {
      // A cancellation while the model is still loading must not wait for the load to finish.
      await Promise.race([this.start(), aborted(opts.signal)]);
      return await this.request(input, opts);
    } finally {
      this.busy--;
      this.updateRef();
    }
  }

  private request(
    input: { history: LocalChatItem[]; schema: AnswerSchema; maxTokens: number },
    opts: { signal: AbortSignal; onProgress?(outputTokens: number): void },
  ): Promise<LocalGeneration> {
    const child = this.child;
    if (!child?.connected) {
      return Promise.reject(
        LlmError.of({
          code: 'E_UNAVAILABLE',
          kind: 'transient',
          source: 'llm local',
          message: 'the local model process is not running',
        }),
      );
    }
    const id = this.nextId++;
    return new Promise<LocalGeneration>((resolve, reject) => {
      const onAbort = () => {
        this.pending.delete(id);
        if (child.connected) child.send({ type: 'abort', id });
        reject(Object.assign(new Error('the local model call was cancelled'), { name: 'AbortError' }));
      };
      if (opts.signal.aborted) return onAbort();
      opts.signal.addEventListener('abort', onAbort, { once: true });
      const settle =
        <T>(fn: (v: T) => void) =>
        (v: T) => {
          opts.signal.removeEventListener('abort', onAbort);
          fn(v);
        };
      this.pending.set(id, { resolve: settle(resolve), reject: settle(reject), onProgress: opts.onProgress });
      child.send({ type: 'generate', id, ...input });
    });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  stop(): void {
    this.child?.kill();
  }
}

const hosts = new Map<string, LocalModelHost>();

/** One running model process of this worker process. */
export interface LocalModelProcess {
  modelPath: string;
  pid: number;
  /** Generations answered, and the milliseconds they took in the model process. */
  calls: number;
  generationMs: number;
  /** Milliseconds from starting the process to the model being loaded. */
  loadMs: number;
}

/**
 * The model processes this worker process runs: one per model file, however many calls it served.
 *
 * ```ts
 * localModelProcesses() // [{ modelPath: '/…/SmolLM2-135M-Instruct.Q4_1.gguf', pid: 4242, calls: 6, generationMs: 5100, loadMs: 2300 }]
 * ```
 */
export function localModelProcesses(): LocalModelProcess[] {
  return [...hosts.entries()].flatMap(([modelPath, host]) =>
    host.pid === undefined ? [] : [{ modelPath, pid: host.pid, ...host.stats }],
  );
}

/**
 * Stop every model process of this worker process (tests call it after their worker stops; a worker
 * that exits takes its model processes with it anyway).
 *
 * ```ts
 * afterAll(() => stopLocalModels());
 * ```
 */
export function stopLocalModels(): void {
  for (const host of hosts.values()) host.stop();
  hosts.clear();
}

function positive(value: string | undefined): number | undefined {
  const n = value === undefined ? NaN : Number(value);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** The spec this provider serves: `local:PATH.gguf`. */
export type LocalSpec = Extract<LlmSpec, { provider: 'local' }>;

/**
 * Create the local provider. Models are loaded on first use and shared by every call in this process.
 *
 * ```ts
 * const local = createLocalProvider();
 * const response = await callLlm(local, req, { provider: 'local', modelPath: '.tools/models/SmolLM2-135M-Instruct.Q4_1.gguf' });
 * ```
 */
export function createLocalProvider(opts: LocalProviderOptions = {}): LlmProvider<LocalSpec> {
  const env = opts.env ?? process.env;
  const runtimeDir = opts.runtimeDir ?? env.STARRY_LLAMA_RUNTIME ?? path.join(projectRootFromHere(), '.tools', 'llama');
  // On 2 cores one thread is fastest: llama.cpp's spinning threads otherwise fight the worker for the CPU.
  const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  const threads = opts.threads ?? positive(env.STARRY_LOCAL_THREADS) ?? Math.max(1, cores - 1);
  const contextSize = opts.contextSize ?? positive(env.STARRY_LOCAL_CONTEXT) ?? 8192;

  function hostFor(modelPath: string): LocalModelHost {
    let host = hosts.get(modelPath);
    if (!host) hosts.set(modelPath, (host = new LocalModelHost(modelPath, { runtimeDir, threads, contextSize })));
    return host;
  }

  return {
    // The model file and the runtime are checked by each call, with the setup step in the error.
    preflight: () => undefined,
    async generate(req, spec, { signal, progress }) {
      const missing = (code: 'ENOENT' | 'E_UNAVAILABLE', message: string) =>
        LlmError.of({ code, kind: 'execution', source: 'llm local', message, suggestion: SETUP_HINT });
      let modelPath = path.resolve(spec.modelPath);
      if (opts.dirs) {
        // Only inside the policy's directories; the model process then loads the file checked here.
        modelPath = await realpathAllowed({
          file: modelPath,
          what: 'model',
          source: 'llm local',
          dirs: opts.dirs,
          ...(opts.notIn ? { notIn: opts.notIn } : {}),
        }).catch((err: unknown) => {
          if (LlmError.isActivityError(err)) throw err;
          throw missing(
            'ENOENT',
            `the local model file ${modelPath} cannot be opened (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): ${SETUP_HINT}, or give local: the path of a .gguf file`,
          );
        });
      }
      if (!existsSync(modelPath))
        throw missing(
          'ENOENT',
          `the local model file ${modelPath} does not exist: ${SETUP_HINT}, or give local: the path of a .gguf file`,
        );
      if (!existsSync(path.join(runtimeDir, 'node_modules', 'node-llama-cpp'))) {
        throw missing('E_UNAVAILABLE', `node-llama-cpp is not installed in ${runtimeDir}: ${SETUP_HINT}`);
      }

      const maxTokens = Math.max(1, req.maxOutputTokens);
      const input = {
        history: localChatHistory(req.messages, req.tools),
        schema: localAnswerSchema(req.tools, { maxOutputTokens: maxTokens }),
        maxTokens,
      };
      progress({ outputTokens: 0 });
      let out: LocalGeneration;
      try {
        out = await hostFor(modelPath).generate(input, { signal, onProgress: (n) => progress({ outputTokens: n }) });
      } catch (err) {
        if (LlmError.isActivityError(err)) throw err;
        throw LlmError.of(
          {
            code: 'E_UNAVAILABLE',
            kind: 'transient',
            source: 'llm local',
            message: `the local model process failed: ${(err as Error).message}`,
          },
          { cause: err },
        );
      }
      Context.current().log.debug('local model turn', {
        model: path.basename(modelPath),
        ms: out.ms,
        inputTokens: out.inputTokens,
        outputTokens: out.outputTokens,
        stopReason: out.stopReason,
      });
      return {
        ...parseLocalAnswer(out.text, { callNumber: req.callNumber }),
        usage: { inputTokens: out.inputTokens, outputTokens: out.outputTokens },
      };
    },
  };
}
