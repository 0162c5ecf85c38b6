/**
 * The worker's policy: the outer limits of every tool call, set by whoever runs the worker (its own
 * environment or a file), never by whoever submits a task. A task's config may only narrow them:
 * `narrowToPolicy` refuses anything wider, naming each field (docs/ARCHITECTURE.md, "Trust boundary").
 * Pure: the worker reads the policy (workers/env.ts) and the tool activity applies it.
 */
import { z } from 'zod';
import { approvalRulesSchema } from './approval';
import type { LlmSpec } from './llm-spec';
import { ConfigError, RefusedError } from './errors';
import { bindingReaches, describeServer, envName, McpEnvSchema, mcpEnvBindingIssues } from './mcp-env';
import { tenantRoots } from './tenant';

/** The shell commands a worker allows when its operator says nothing. */
export const DEFAULT_SHELL_ALLOW = ['ls', 'cat', 'echo', 'pwd', 'wc', 'head', 'tail', 'grep', 'sleep'];

/** The tool output a task keeps when its config says nothing, unless the worker's cap is lower. */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024;

const absolutePath = z
  .string()
  .min(1)
  .refine((p) => p.startsWith('/') && !p.includes('\0'), { message: 'must be an absolute path' })
  .transform(normalizePosix);

// ---- The sandbox (issue 30): resource limits, and what each stdio MCP server may see and be given ----

const MiB = 1024 * 1024;

/**
 * The resource limits of every sandboxed program (`shell.run`, stdio MCP servers) and of a task's
 * workspace. A task's config has no knob for them: the operator's values apply to every task.
 */
export const SandboxLimitsSchema = z
  .object({
    /** Processes and threads a sandbox may hold at once. */
    processes: z.number().int().min(8).max(65_536).default(256),
    /** Memory of a sandbox (its processes and its /tmp together, where cgroups count it). */
    memoryBytes: z
      .number()
      .int()
      .min(16 * MiB)
      .default(1024 * MiB),
    /** CPU time of each process (an MCP server's over its life). */
    cpuSeconds: z.number().int().min(1).max(86_400).default(60),
    /** The largest file a program may write. */
    fileSizeBytes: z
      .number()
      .int()
      .min(1)
      .default(256 * MiB),
    /** Files a process may have open at once. */
    openFiles: z.number().int().min(16).max(1_048_576).default(1024),
    /** The size of the sandbox's private /tmp; 0: a read-only, empty /tmp. */
    tmpBytes: z
      .number()
      .int()
      .min(0)
      .default(64 * MiB),
    /**
     * What a task's workspace roots may hold together, in bytes: every file, directory and other entry below
     * them, each its apparent size rounded up to 4 KiB blocks, at least one (core/disk.ts `entryBytes`).
     */
    workspaceBytes: z
      .number()
      .int()
      .min(1)
      .default(1024 * MiB),
    /**
     * What all the workspaces of one tenant may hold together, counted the same way: its space `<root>/<tenant>`
     * under each root (a plain agent's: everything under the roots), so a new agent id is not new room.
     */
    tenantBytes: z
      .number()
      .int()
      .min(1)
      .default(10 * 1024 * MiB),
    /**
     * Use cgroups where the host lets the worker create them (exact process and memory limits); false: rlimits only.
     */
    cgroups: z.boolean().default(true),
  })
  .strict();

export type SandboxLimits = z.output<typeof SandboxLimitsSchema>;

/** The limits of a worker whose policy says nothing about them. */
export const DEFAULT_LIMITS: SandboxLimits = SandboxLimitsSchema.parse({});

/**
 * The limits a sandboxed program can be seen to hit (E_LIMIT names one); /tmp and open files show as the program's own
 * ENOSPC and EMFILE.
 */
export type LimitName = 'processes' | 'memory' | 'cpu' | 'fileSize' | 'disk';

/**
 * A limit as an E_LIMIT message names it (with its policy field and value) and what the model can do.
 *
 * ```ts
 * describeLimit('cpu', DEFAULT_LIMITS).limit // 'the CPU time limit (limits.cpuSeconds: 60 s per process)'
 * ```
 */
export function describeLimit(name: LimitName, limits: SandboxLimits): { limit: string; suggestion: string } {
  switch (name) {
    case 'processes':
      return {
        limit: `the process limit (limits.processes: ${limits.processes} processes and threads at once)`,
        suggestion: 'Run fewer processes at once: no background jobs, less parallelism.',
      };
    case 'memory':
      return {
        limit: `the memory limit (limits.memoryBytes: ${formatBytes(limits.memoryBytes)})`,
        suggestion: 'Use less memory: work on less data at a time.',
      };
    case 'cpu':
      return {
        limit: `the CPU time limit (limits.cpuSeconds: ${limits.cpuSeconds} s per process)`,
        suggestion: 'Do less work per call, or split the work into smaller steps.',
      };
    case 'fileSize':
      return {
        limit: `the file size limit (limits.fileSizeBytes: ${formatBytes(limits.fileSizeBytes)} per file)`,
        suggestion: 'Write smaller files, or split the output across files.',
      };
    case 'disk':
      return {
        limit: `the workspace's disk limit (limits.workspaceBytes: ${formatBytes(limits.workspaceBytes)} for all its files and directories)`,
        suggestion: 'Remove files the task no longer needs, or write less.',
      };
  }
}

/** `64 MiB`, `512 KiB` or `1000 bytes`: a size as an operator wrote it. */
export function formatBytes(n: number): string {
  if (n >= MiB && n % MiB === 0) return `${n / MiB} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/**
 * Environment variables that change what code a program loads or runs. No config may set them, whatever
 * the value: with one, a task would run its own code inside a server the operator pinned (and gave a
 * network and secrets), e.g. `NODE_OPTIONS=--require ./evil.js`.
 */
const CODE_LOADING_ENV = new Set([
  'PATH',
  'HOME',
  'ENV',
  'BASH_ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PS4',
  'IFS',
  'GCONV_PATH',
  'LOCPATH',
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_REPL_EXTERNAL_MODULE',
  'PYTHONPATH',
  'PYTHONHOME',
  'PYTHONSTARTUP',
  'PYTHONUSERBASE',
  'PYTHONEXECUTABLE',
  'PYTHONPLATLIBDIR',
  'VIRTUAL_ENV',
  'CONDA_PREFIX',
  'PERL5LIB',
  'PERLLIB',
  'PERL5OPT',
  'RUBYLIB',
  'RUBYOPT',
  'GEM_HOME',
  'GEM_PATH',
  'BUNDLE_GEMFILE',
  'CLASSPATH',
  'JAVA_TOOL_OPTIONS',
  'JDK_JAVA_OPTIONS',
  '_JAVA_OPTIONS',
  'GOPATH',
  'GOFLAGS',
  'GOPROXY',
  'CARGO_HOME',
  'RUSTUP_HOME',
  'XDG_CONFIG_HOME',
  'XDG_CONFIG_DIRS',
  'XDG_DATA_HOME',
  'XDG_DATA_DIRS',
]);
/** Whole families of them: the dynamic loader's, and package managers' (where a program's code comes from). */
const CODE_LOADING_PREFIXES = [
  'LD_',
  'DYLD_',
  'NPM_CONFIG_',
  'YARN_',
  'PNPM_',
  'BUN_',
  'DENO_',
  'UV_',
  'PIP_',
  'PIPX_',
  'GIT_',
];

/**
 * True when a variable changes what code a program loads or runs (compared case-insensitively: npm reads
 * `npm_config_*` in any case).
 *
 * ```ts
 * changesCodeLoading('NODE_OPTIONS') // true
 * changesCodeLoading('LOG_LEVEL')    // false
 * ```
 */
export function changesCodeLoading(name: string): boolean {
  const upper = name.toUpperCase();
  return CODE_LOADING_ENV.has(upper) || CODE_LOADING_PREFIXES.some((prefix) => upper.startsWith(prefix));
}

const McpCommandObjectSchema = z
  .object({
    command: z.string().min(1),
    /** The exact args a config must give; absent: any. */
    args: z.array(z.string()).optional(),
    /** The server reaches the network (its own network namespace otherwise: loopback only). */
    network: z.boolean().default(false),
    /** Directories it sees read-only besides /usr: its code and node_modules, say. */
    readOnly: z.array(absolutePath).default([]),
    /** Variables a config may give a value of its own (a `${env:NAME}` of `mcpEnv` may go in any other). */
    env: z
      .array(
        envName.refine((n) => !changesCodeLoading(n), {
          error: (i) => `${String(i.input)} changes how a program loads code: no config may set it`,
        }),
      )
      .default([]),
  })
  .strict();

/** One `mcpCommands` entry: a program name (no network, nothing more to see, any args) or the whole entry. */
const McpCommandSchema = z
  .union([z.string().min(1), McpCommandObjectSchema], {
    error: 'an mcpCommands entry is a program name or {command, args?, network?, readOnly?, env?}',
  })
  .transform((entry) =>
    typeof entry === 'string' ? { command: entry, network: false, readOnly: [], env: [] } : entry,
  );

export type McpCommandPolicy = z.output<typeof McpCommandObjectSchema>;

// ---- end of the sandbox's schemas ----

/**
 * Why `${env:NAME}` may not go to the server `spec`, or undefined: the policy must list the variable,
 * and a bound entry must name the server's host, or the pinned `mcpCommands` entry it runs as.
 */
function mcpEnvProblem(
  policy: WorkerPolicy,
  name: string,
  spec: { command: string; args?: string[] } | { url: string },
): string | undefined {
  const entry = policy.mcpEnv.find((e) => e.name === name);
  if (!entry)
    return `is not a variable the worker passes to MCP servers (allowed: ${policy.mcpEnv.map((e) => e.name).join(', ') || 'none'})`;
  if (entry.hosts === undefined && entry.commands === undefined) return undefined;
  let url: URL | undefined;
  if ('url' in spec) {
    try {
      url = new URL(spec.url);
    } catch {
      url = undefined;
    }
  }
  if (url) {
    if (isHostAllowed(url, entry.hosts ?? [])) return undefined;
  } else if ('command' in spec) {
    if (bindingReaches(entry.commands ?? [], mcpCommandEntry(policy, spec.command, spec.args))) return undefined;
  }
  const where = [...(entry.hosts ?? []).map((h) => `host ${h}`), ...(entry.commands ?? []).map(describeServer)];
  const to =
    'url' in spec
      ? `'${spec.url}'`
      : `the command '${spec.command}'${spec.args?.length ? ` with the args ${JSON.stringify(spec.args)}` : ''}`;
  return `may go only to ${where.join(', ') || 'no MCP server'}, not to ${to}`;
}

export const WorkerPolicySchema = z
  .object({
    /** Directories a task's workspace roots must lie in (a root may be one of them or below one). */
    roots: z.array(absolutePath).min(1, 'needs at least one root'),
    /** Commands a task may allow `shell.run` to start. */
    shellAllow: z.array(z.string().min(1)).default(DEFAULT_SHELL_ALLOW),
    /** Host entries a task may allow `http.get` to reach (as `tools.httpAllow`, plus `host:*` for any port). */
    httpAllow: z.array(z.string().min(1)).default([]),
    /**
     * Programs a task's config may start as stdio MCP servers (`tools.mcp.<server>.command`), each with
     * what its sandbox grants (network, read-only directories, env names a config may set); none by default.
     */
    mcpCommands: z.array(McpCommandSchema).default([]),
    /**
     * The worker's environment variables a task's config may pass to its MCP servers as `${env:NAME}`
     * (in `env` or `headers`); none by default, so a config cannot send the worker's secrets anywhere.
     * An entry `{name, hosts?, commands?}` binds the variable to the MCP URLs of those hosts and the
     * stdio servers of those pinned `mcpCommands` entries: a token goes only where its operator meant it to.
     */
    mcpEnv: z.array(McpEnvSchema).default([]),
    /** The largest `tools.maxOutputBytes` a task may ask for. */
    maxOutputBytes: z
      .number()
      .int()
      .positive()
      .max(1024 * 1024)
      .default(1024 * 1024),
    /** `shell.run` may run programs as root when the worker does (otherwise as `nobody`); MCP servers never do. */
    allowRoot: z.boolean().default(false),
    /** Where side-effecting tools journal their calls (default: `tool-journal` in the worker's state folder, `.temporal/`). */
    journalDir: absolutePath.optional(),
    /**
     * Hosts a task's `openai:MODEL@BASE_URL` may name (entries as `httpAllow`). The worker's own
     * endpoint (`OPENAI_BASE_URL`, where its key goes) is added by the worker; no other host ever
     * receives the key.
     */
    llmAllow: z.array(z.string().min(1)).default([]),
    /** Directories `scripted:FILE` scripts and `local:FILE.gguf` models may be read from, besides `roots`. */
    llmDirs: z.array(absolutePath).default([]),
    /**
     * Calls every task on this worker must have approved by a human (`ask`) or may never make (`deny`),
     * on top of the task's own `tools.approval`: e.g. `{"ask": ["shell.run"]}`.
     */
    approval: approvalRulesSchema().optional(),
    /** Resource limits of every sandboxed program and of a task's workspace (the sandbox's block above). */
    limits: SandboxLimitsSchema.prefault({}),
  })
  .strict()
  // A secret bound to a command with free args would reach any code: refused here, naming the entry.
  .superRefine((policy, ctx) => {
    for (const { path, message } of mcpEnvBindingIssues(policy.mcpEnv, policy.mcpCommands))
      ctx.addIssue({ code: 'custom', path, message });
  });

export type WorkerPolicyInput = z.input<typeof WorkerPolicySchema>;
export type WorkerPolicy = z.output<typeof WorkerPolicySchema>;

/** The parts of a task's config the policy bounds. */
export interface TaskLimits {
  workspace: string[];
  /** The LLM: its endpoint or file must be one the policy allows. */
  llm?: LlmSpec;
  tools: {
    /** Unset: the worker's own list (`withWorkerDefaults`), which always lies within its policy. */
    shellAllow?: string[];
    httpAllow: string[];
    /** Unset: the default or the worker's cap, whichever is lower. */
    maxOutputBytes?: number;
    mcp?: Record<
      string,
      | { command: string; args?: string[]; env?: Record<string, string> }
      | { url: string; headers?: Record<string, string> }
    >;
  };
}

/**
 * Validate a raw policy and fill in the defaults.
 *
 * @throws ConfigError naming every invalid field.
 */
export function parseWorkerPolicy(raw: unknown, origin = 'worker policy'): WorkerPolicy {
  const parsed = WorkerPolicySchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  - ${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`);
    throw new ConfigError(`Invalid ${origin}:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/**
 * A task's tool settings with what its config leaves unset filled in by the worker that runs it: the
 * policy's own `shellAllow`, and the default output cap or the policy's, whichever is lower. A default
 * is never wider than the worker: a config that says nothing always lies within the policy. Without a
 * policy (a tool run outside a worker), the worker defaults.
 *
 * ```ts
 * withWorkerDefaults({ httpAllow: [] }, parseWorkerPolicy({ roots: ['/srv'], shellAllow: ['ls'], maxOutputBytes: 1000 }))
 * // { httpAllow: [], shellAllow: ['ls'], maxOutputBytes: 1000 }
 * ```
 */
export function withWorkerDefaults<T extends { shellAllow?: string[]; httpAllow: string[]; maxOutputBytes?: number }>(
  tools: T,
  policy?: Pick<WorkerPolicy, 'shellAllow' | 'maxOutputBytes'>,
): T & { shellAllow: string[]; maxOutputBytes: number } {
  return {
    ...tools,
    shellAllow: tools.shellAllow ?? policy?.shellAllow ?? DEFAULT_SHELL_ALLOW,
    maxOutputBytes:
      tools.maxOutputBytes ?? Math.min(DEFAULT_MAX_OUTPUT_BYTES, policy?.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES),
  };
}

/**
 * Check that a task's limits lie within the policy and return them unchanged, or refuse naming each
 * wider field (an unset `shellAllow` or `maxOutputBytes` is the worker's own, so never wider). Roots are compared
 * lexically here (the tool activity compares realpaths again). A tenant's task may use only the tenant's
 * part of the roots (`<root>/<tenant>`, core/tenant.ts), for its workspace and its script alike.
 *
 * ```ts
 * narrowToPolicy(policy, { workspace: ['/srv/ws/a'], tools }) // ok when policy.roots includes '/srv/ws'
 * narrowToPolicy(policy, { workspace: ['/srv/ws/t2/a'], tools }, 't1') // refused: not in /srv/ws/t1
 * ```
 * @throws RefusedError listing every field wider than the policy, with what the policy allows.
 */
export function narrowToPolicy<T extends TaskLimits>(policy: WorkerPolicy, task: T, tenant?: string): T {
  const wider: string[] = [];
  const roots = tenantRoots(policy.roots, tenant);
  for (const root of task.workspace) {
    if (!root.startsWith('/') || !roots.some((allowed) => isWithin(normalizePosix(root), allowed))) {
      wider.push(`workspace: '${root}' is not inside ${rootsShown(roots, tenant)}`);
    }
  }
  const commands = (task.tools.shellAllow ?? []).filter((c) => !policy.shellAllow.includes(c));
  if (commands.length) {
    wider.push(
      `tools.shellAllow: ${commands.map((c) => `'${c}'`).join(', ')} not allowed by the worker (allowed: ${policy.shellAllow.join(', ') || 'none'})`,
    );
  }
  const hosts = task.tools.httpAllow.filter((h) => !hostEntryWithin(h, policy.httpAllow));
  if (hosts.length) {
    wider.push(
      `tools.httpAllow: ${hosts.map((h) => `'${h}'`).join(', ')} not allowed by the worker (allowed: ${policy.httpAllow.join(', ') || 'none'})`,
    );
  }
  for (const [server, spec] of Object.entries(task.tools.mcp ?? {})) {
    const templates = Object.values(('command' in spec ? spec.env : spec.headers) ?? {}).join('\n');
    for (const name of new Set([...templates.matchAll(ENV_TEMPLATE)].map((m) => m[1]!))) {
      const problem = mcpEnvProblem(policy, name, spec);
      if (problem) wider.push(`tools.mcp.${server}: \${env:${name}} ${problem}`);
    }
    if ('command' in spec) wider.push(...stdioServerRefusals(policy, server, spec));
    if ('url' in spec) {
      const host = hostOf(spec.url);
      if (host === undefined || !hostEntryWithin(host, policy.httpAllow)) {
        wider.push(
          `tools.mcp.${server}: the host of '${spec.url}' is not allowed by the worker (allowed: ${policy.httpAllow.join(', ') || 'none'})`,
        );
      }
    }
  }
  const llm = task.llm === undefined ? undefined : llmSpecProblem(task.llm, policy, tenant);
  if (llm) wider.push(`llm: ${llm}`);
  if (task.tools.maxOutputBytes !== undefined && task.tools.maxOutputBytes > policy.maxOutputBytes) {
    wider.push(`tools.maxOutputBytes: ${task.tools.maxOutputBytes} is above the worker's cap ${policy.maxOutputBytes}`);
  }
  if (wider.length) throw new RefusedError(widerThanPolicy(wider), { issues: wider });
  return task;
}

/** The roots a refusal names: the worker's, or a tenant's part of them. */
export function rootsShown(roots: readonly string[], tenant: string | undefined): string {
  return tenant === undefined
    ? `a root the worker allows (${roots.join(', ')})`
    : `tenant ${tenant}'s part of the roots the worker allows (${roots.join(', ')})`;
}

/**
 * The refusal of a config wider than the policy, each wider field on a line, and what helps: a config
 * within the policy (a field left out is the worker's own), or a wider policy.
 *
 * ```ts
 * widerThanPolicy(["tools.shellAllow: 'sh' not allowed by the worker (allowed: ls)"])
 * ```
 */
export function widerThanPolicy(wider: string[]): string {
  return (
    `The task's config is wider than the worker's policy; a task may only narrow it:\n${wider.map((w) => `  - ${w}`).join('\n')}\n` +
    "Submit the task with a config within the policy (tools.shellAllow and tools.maxOutputBytes left out are the worker's own), or ask the worker operator to widen STARRY_WORKER_POLICY."
  );
}

/**
 * Why the policy does not allow the `llm` spec, or undefined: an OpenAI-compatible base URL must have a
 * host of `llmAllow`; a script must be an absolute path inside `roots` (a tenant's: its part of them) or
 * `llmDirs`; a model only inside `llmDirs` and outside every root, since the model runtime is native
 * code that parses the file and a task writes anything under the roots (compared lexically here; the
 * activity compares what it opened). Gemini's and Bedrock's endpoint, region and credentials are the
 * worker's alone, so a spec cannot name one (which Bedrock models the worker may call is its IAM role's to say).
 *
 * ```ts
 * llmSpecProblem(parseLlmSpec('openai:gpt@http://10.0.0.9/v1'), policy) // "the host of 'http://10.0.0.9/v1' is not one …"
 * ```
 */
export function llmSpecProblem(
  spec: LlmSpec,
  policy: Pick<WorkerPolicy, 'roots' | 'llmAllow' | 'llmDirs'>,
  tenant?: string,
): string | undefined {
  switch (spec.provider) {
    case 'openai': {
      if (spec.baseUrl === undefined) return undefined; // the worker's own endpoint
      let url: URL;
      try {
        url = new URL(spec.baseUrl);
      } catch {
        return `'${spec.baseUrl}' is not a URL`;
      }
      if (isHostAllowed(url, policy.llmAllow)) return undefined;
      return `the host of '${spec.baseUrl}' is not one the worker's LLM calls may reach (llmAllow: ${policy.llmAllow.join(', ') || 'none'})`;
    }
    case 'scripted': {
      const dirs = scriptDirs(policy, tenant);
      if (absoluteWithin(spec.file, dirs)) return undefined;
      return `the script '${spec.file}' is not an absolute path inside a directory the worker reads scripts from (${dirs.join(', ')})`;
    }
    case 'local': {
      const file = spec.modelPath;
      if (absoluteWithin(file, policy.llmDirs) && !absoluteWithin(file, policy.roots)) return undefined;
      const inRoot = absoluteWithin(file, policy.roots)
        ? ', and never one inside a workspace root, where tasks write'
        : '';
      return `the model '${file}' is not an absolute path inside a directory the worker loads models from (llmDirs: ${policy.llmDirs.join(', ') || 'none'})${inRoot}`;
    }
    case 'gemini':
    case 'bedrock':
      return undefined;
  }
}

/** True when `file` is an absolute path inside one of `dirs` (lexically). */
function absoluteWithin(file: string, dirs: readonly string[]): boolean {
  return file.startsWith('/') && !file.includes('\0') && dirs.some((dir) => isWithin(normalizePosix(file), dir));
}

/** Where `scripted:` files may be read from for a tenant's task: its part of the roots, then `llmDirs`. */
export function scriptDirs(policy: Pick<WorkerPolicy, 'roots' | 'llmDirs'>, tenant?: string): string[] {
  return [...tenantRoots(policy.roots, tenant), ...policy.llmDirs];
}

/**
 * Whether `url` has a host `allow` names. Entries match the hostname exactly, `host:port` exactly,
 * `host:*` on any port, or `*.example.com` for any subdomain. An entry without a port allows the
 * scheme's default port only (80, 443): allowing `localhost` must not open every service on it.
 *
 * ```ts
 * isHostAllowed(new URL('https://docs.example.com/'), ['*.example.com']) // true
 * isHostAllowed(new URL('http://localhost:8233/'), ['localhost']) // false
 * isHostAllowed(new URL('http://localhost:8233/'), ['localhost:*']) // true
 * ```
 */
export function isHostAllowed(url: URL, allow: string[]): boolean {
  const host = url.hostname.toLowerCase();
  // URL leaves `port` empty for the scheme's default port.
  const port = url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '');
  return allow.some((raw) => {
    const entry = raw.toLowerCase();
    const m = /^(.*):(\d+|\*)$/.exec(entry);
    const [name, entryPort] = m
      ? [m[1] as string, m[2] === '*' ? '*' : String(Number(m[2]))]
      : [entry, url.protocol === 'https:' ? '443' : '80'];
    if (entryPort !== '*' && entryPort !== port) return false;
    if (name.startsWith('*.')) return host.endsWith(name.slice(1));
    return name === host;
  });
}

/** `${env:NAME}` in an MCP server's env or header value: filled on the worker from its environment. */
export const ENV_TEMPLATE = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g;
/** A value that is one `${env:NAME}` and nothing else: the worker's value, under the name the server reads. */
const WHOLE_TEMPLATE = /^\$\{env:[A-Za-z_][A-Za-z0-9_]*\}$/;

/**
 * The policy's entry for the stdio server `command args`: an entry that pins exactly these args first,
 * else one that leaves them free; undefined when the worker does not start it.
 *
 * ```ts
 * mcpCommandEntry(policy, 'node', ['/opt/mcp/github.js']) // { command: 'node', args: [...], network: true, ... }
 * ```
 */
export function mcpCommandEntry(
  policy: WorkerPolicy,
  command: string,
  args: readonly string[] = [],
): McpCommandPolicy | undefined {
  const mine = policy.mcpCommands.filter((e) => e.command === command);
  return (
    mine.find((e) => e.args !== undefined && e.args.length === args.length && e.args.every((a, i) => a === args[i])) ??
    mine.find((e) => e.args === undefined)
  );
}

/** What a stdio server's config asks beyond its policy entry: the command or its args, and its env's names. */
function stdioServerRefusals(
  policy: WorkerPolicy,
  server: string,
  spec: { command: string; args?: string[]; env?: Record<string, string> },
): string[] {
  const where = `tools.mcp.${server}`;
  const entry = mcpCommandEntry(policy, spec.command, spec.args);
  if (!entry) {
    const pinned = policy.mcpCommands.filter((e) => e.command === spec.command);
    if (pinned.length) {
      return [
        `${where}: the worker starts '${spec.command}' only with the args ${pinned.map((e) => JSON.stringify(e.args)).join(' or ')} (asked: ${JSON.stringify(spec.args ?? [])})`,
      ];
    }
    const allowed = [...new Set(policy.mcpCommands.map((e) => e.command))].join(', ') || 'none';
    return [
      `${where}: the command '${spec.command}' is not one the worker starts as an MCP server (allowed: ${allowed})`,
    ];
  }
  const refused: string[] = [];
  const names = Object.keys(spec.env ?? {});
  const loaders = names.filter(changesCodeLoading);
  if (loaders.length) {
    refused.push(
      `${where}.env: ${loaders.join(', ')} changes how the server loads code; no config may set it (nor PATH, HOME, LD_*, NODE_OPTIONS, PYTHONPATH and their like)`,
    );
  }
  const free = names.filter(
    (n) => !changesCodeLoading(n) && !WHOLE_TEMPLATE.test(spec.env![n]!) && !entry.env.includes(n),
  );
  if (free.length) {
    refused.push(
      `${where}.env: ${free.join(', ')} ${free.length > 1 ? 'have values' : 'has a value'} of the config's own, which the worker allows only for the names its policy lists for '${spec.command}' (listed: ${entry.env.join(', ') || 'none'}); pass a worker variable as \${env:NAME} instead`,
    );
  }
  return refused;
}

/** `host` or `host:port` of a URL as an allow entry names it (the port only when the URL gives one). */
function hostOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.port ? `${u.hostname}:${u.port}` : u.hostname;
  } catch {
    return undefined;
  }
}

/** True when the allow entry `entry` grants nothing the entries in `outer` do not. */
function hostEntryWithin(entry: string, outer: string[]): boolean {
  const e = entry.toLowerCase();
  return outer.some((raw) => {
    const o = raw.toLowerCase();
    if (o === e) return true;
    // `host:*` covers the host on any port.
    if (o.endsWith(':*'))
      return e === o.slice(0, -2) || (e.startsWith(o.slice(0, -1)) && /^\d+$/.test(e.slice(o.length - 1)));
    if (!o.startsWith('*.')) return false;
    // `*.example.com` covers `a.example.com` and `*.a.example.com`.
    const bare = e.startsWith('*.') ? e.slice(1) : `.${e}`;
    return bare.endsWith(o.slice(1));
  });
}

/** True when `child` is `root` or below it; both normalized absolute POSIX paths. */
export function isWithin(child: string, root: string): boolean {
  return child === root || root === '/' || child.startsWith(`${root}/`);
}

/** Collapse `.`, `..`, repeated and trailing slashes of an absolute POSIX path (no filesystem access). */
export function normalizePosix(p: string): string {
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return `/${out.join('/')}`;
}

// ---- The worker's roots at start: a worker that runs tool calls refuses to start on a root it cannot use ----

/** Where a worker's roots were set: the policy's `roots`, `STARRY_WORKSPACE_ROOTS`, or (absent) the defaults. */
export type RootsSource = 'STARRY_WORKER_POLICY' | 'STARRY_WORKSPACE_ROOTS';

/** One root a worker cannot use, and why: `does not exist`, `is not a directory`, `is not writable …`. */
export interface RootProblem {
  root: string;
  problem: string;
}

/**
 * Whether a worker checks its roots at start: it does when it runs tool calls itself, i.e. it is a tool
 * worker (`starry worker --tools`) or its tools have no task queue of their own. A workflow worker whose
 * tools run on tool workers uses no root.
 *
 * ```ts
 * runsToolCalls({ tools: false, toolTaskQueue: 'openstarry-tools' }) // false
 * runsToolCalls({ tools: true, toolTaskQueue: 'openstarry-tools' })  // true
 * ```
 */
export function runsToolCalls({ tools, toolTaskQueue }: { tools: boolean; toolTaskQueue?: string }): boolean {
  return tools || !toolTaskQueue;
}

/**
 * Why a worker that runs tool calls refuses to start, or undefined when every root is usable: each root
 * it cannot use on a line, then what to do (mount or create it, let the worker's user write it, or point
 * the setting the roots came from elsewhere).
 *
 * ```ts
 * unusableRootsRefusal([{ root: '/workspaces', problem: 'does not exist' }], 'STARRY_WORKSPACE_ROOTS')
 * // "this worker runs tool calls, but a workspace root it allows (STARRY_WORKSPACE_ROOTS) cannot be used: …"
 * ```
 */
export function unusableRootsRefusal(problems: RootProblem[], from: RootsSource): string | undefined {
  if (!problems.length) return undefined;
  const setting = from === 'STARRY_WORKER_POLICY' ? 'the roots of STARRY_WORKER_POLICY' : 'STARRY_WORKSPACE_ROOTS';
  const first = problems[0]!.root;
  return (
    `this worker runs tool calls, but ${problems.length > 1 ? 'workspace roots' : 'a workspace root'} it allows (${from}) cannot be used:\n` +
    problems.map((p) => `  - ${p.root}: ${p.problem}`).join('\n') +
    `\nMount the workspaces' file system there (on AWS, the stack's EFS at /workspaces) or create the directory (mkdir -p ${first}), ` +
    `let the worker's user write it, or set ${setting} to directories it can write; then start the worker again.`
  );
}
