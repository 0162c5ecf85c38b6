/**
 * The worker's configuration, read once from its own environment (never from a task) and checked with
 * zod: `WorkerEnvSchema` is the list of every variable a worker reads — the CDK stack types its
 * container's environment and secrets with `WorkerEnvName`, so it cannot set one the worker ignores.
 *
 * ```ts
 * const config = workerConfigFromEnv(); // { temporal, taskQueue, policy, alerts, llm, workflowBundlePath? }
 * const worker = await createWorker({ connection: await connectWorker(config.temporal), config });
 * ```
 */
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { temporalEnv, type TemporalEnv } from '../client/connection';
import { formatIssues } from '../core/config';
import { ConfigError } from '../core/errors';
import {
  parseWorkerPolicy,
  unusableRootsRefusal,
  type RootProblem,
  type RootsSource,
  type WorkerPolicy,
} from '../core/worker-policy';
import { parsePricing, type PricingTable } from '../core/pricing';
import type { LlmProviderOptions } from '../activities/llm';
import { openAiBaseUrl } from '../activities/llm/openai';
import type { AlertSinks } from '../activities/alert';
import { defaultWorkspaceRoot, projectRoot } from '../dev/paths';
import type { SettingsFile } from './own-paths';
import type { VersioningOptions } from './versioning';
import { pluginList } from './plugins';
import { telemetryConfigFromEnv, type MetricsConfig, type TracingConfig } from './otel-env';

const text = (what: string) => z.string().trim().min(1).optional().describe(what);
const url = (what: string) =>
  z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .optional()
    .describe(what);
const count = (what: string) => z.coerce.number().int().positive().optional().describe(what);
/** A whole number from `min` up; `error` says what it must be for every kind of bad value. */
const atLeast = (min: number, error: string) =>
  z.coerce.number({ error }).int({ error }).min(min, { error }).optional();
const CACHE_SIZE = 'must be a whole number >= 0 (workflows in the cache)';
const WFT_SLOTS = 'must be a whole number >= 2 (workflow tasks at once)';

/**
 * Workflow tasks a worker runs at once, against the SDK's 40. Task-queue priority orders only the work
 * still on the server: a worker that took 40 makes a halt wait behind 39 in its own process (SYSTEM_HALT
 * to STOPPED 0.2-0.9 s on a saturated worker; 50 ms at p50 and 67 at worst with 4, docs/BENCHMARKS.md).
 * The cost: a slot is held through the round trips to the server, so a saturated worker next to its
 * server runs ~25% fewer ticks a second with 4 than with 40 (8 did not bring the halt under 100 ms).
 */
export const DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS = 4;

/** Every variable a worker reads. Empty values count as unset. */
export const WorkerEnvSchema = z.object({
  // Temporal (client/connection.ts)
  TEMPORAL_ADDRESS: text('host:port of the Temporal frontend; default 127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: text('the namespace; default `default`'),
  TEMPORAL_API_KEY: text('an API key (Temporal Cloud); turns TLS on'),
  TEMPORAL_TLS_CERT: text('mTLS client certificate: PEM content or the path of a PEM file'),
  TEMPORAL_TLS_KEY: text('mTLS client key: PEM content or the path of a PEM file'),
  STARRY_TASK_QUEUE: text('the task queue; default `openstarry`'),
  STARRY_TOOL_TASK_QUEUE: text(
    'the task queue of the tool activities, served by `starry worker --tools`; default: the task queue (one worker runs all)',
  ),
  STARRY_WORKFLOW_BUNDLE: text('a prebuilt workflow bundle; default lib/workflow-bundle.js'),
  STARRY_MAX_CACHED_WORKFLOWS: atLeast(0, CACHE_SIZE).describe(
    'workflows kept in memory between their tasks (~0.7 MB each, docs/BENCHMARKS.md); 0: every task replays its history; ' +
      "default the SDK's, from the worker's heap limit",
  ),
  STARRY_MAX_CONCURRENT_WORKFLOW_TASKS: atLeast(2, WFT_SLOTS).describe(
    'workflow tasks the worker runs at once; the rest wait on the server, where a halted agent goes first; ' +
      `default ${DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS} (docs/ARCHITECTURE.md)`,
  ),
  STARRY_MAX_CONCURRENT_TOOL_CALLS: atLeast(1, 'must be a whole number >= 1 (tool calls at once)').describe(
    "a tool worker's tool calls at once; the rest wait on the server for a free slot; default the SDK's 100",
  ),
  STARRY_PLUGINS: text(
    'plugin modules (paths or module names, separated by commas or `:`) whose guides and context strategies the worker offers; ' +
      'it then bundles its workflows at start',
  ),
  // Worker Deployment Versioning (workers/versioning.ts)
  STARRY_DEPLOYMENT_NAME: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,200}$/, 'must be letters, digits, "_" and "-"')
    .optional()
    .describe('the Worker Deployment the worker joins; default `openstarry`'),
  STARRY_MAKE_CURRENT: z
    .enum(['if-none', 'always', 'take-over'], { error: 'must be if-none, always or take-over' })
    .optional()
    .describe(
      "who makes the worker's version current: if-none (default: when the deployment has none), always (`starry worker --set-current`), take-over",
    ),
  // The trust boundary (core/worker-policy.ts)
  STARRY_WORKER_POLICY: text('the outer limits of every tool call: JSON inline or the path of a JSON file'),
  STARRY_WORKSPACE_ROOTS: text('without a policy: the `:`-separated roots tasks may use'),
  // Cost accounting (core/pricing.ts)
  STARRY_PRICING: text(
    'the price table, USD per million tokens: {"<provider>:<model>": {inputPerMTok, cachedInputPerMTok, outputPerMTok}}, ' +
      'JSON inline or the path of a JSON file',
  ),
  STARRY_TOOLS_ALLOW_ROOT: z
    .enum(['0', '1'], { error: 'must be 0 or 1' })
    .optional()
    .describe('1: shell.run may run programs as root when the worker does (MCP servers never do)'),
  // Alerts (activities/alert.ts)
  STARRY_ALERT_WEBHOOK: url('a webhook that receives each alert as JSON'),
  STARRY_ALERT_TOPIC_ARN: z
    .string()
    .regex(/^arn:aws[\w-]*:sns:/, 'must be an SNS topic ARN')
    .optional()
    .describe('an SNS topic for alerts'),
  STARRY_UI_URL: url('the Web UI, for links in alerts'),
  // The transcript store (activities/store/)
  STARRY_STORE_BUCKET: z
    .string()
    .regex(
      /^(?!\d+\.\d+\.\d+\.\d+$)(?!xn--)(?!.*\.\.)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
      'must be an S3 bucket name (3–63 lowercase letters, digits, dots and hyphens)',
    )
    .optional()
    .describe('an S3 bucket for transcript blobs, shared by every worker; default: a local directory'),
  STARRY_STORE_PREFIX: text('the key prefix of transcript blobs in STARRY_STORE_BUCKET; default `blobs/`'),
  STARRY_STORE_DIR: text('a directory for transcript blobs when there is no bucket; default .temporal/blobs'),
  // LLM providers (activities/llm/, docs/LLM-PROVIDERS.md)
  OPENAI_API_KEY: text('the OpenAI-compatible provider key'),
  STARRY_OPENAI_API_KEY: text('the OpenAI-compatible provider key (wins over OPENAI_API_KEY)'),
  OPENAI_BASE_URL: url(
    'the endpoint the OpenAI key belongs to, and `openai:MODEL` calls; default https://api.openai.com/v1',
  ),
  STARRY_OPENAI_BASE_URL: url('the endpoint the OpenAI key belongs to (wins over OPENAI_BASE_URL)'),
  GEMINI_API_KEY: text('a Gemini API key'),
  GOOGLE_API_KEY: text('a Gemini API key (wins over GEMINI_API_KEY)'),
  GOOGLE_CLOUD_PROJECT: text('the Vertex AI project (Application Default Credentials)'),
  GOOGLE_CLOUD_LOCATION: text('the Vertex AI location; default global'),
  GOOGLE_GENAI_USE_VERTEXAI: z
    .enum(['true', 'false', 'TRUE', 'FALSE', 'True', 'False'])
    .optional()
    .describe('false: the Gemini Developer API instead of Vertex AI'),
  GOOGLE_APPLICATION_CREDENTIALS: text('a service account key file for Application Default Credentials'),
  STARRY_GEMINI_BASE_URL: url('another Gemini endpoint (tests, proxies)'),
  AWS_REGION: text('the AWS region of Bedrock models (bedrock:MODEL_ID); credentials come from the AWS default chain'),
  AWS_DEFAULT_REGION: text('the AWS region when AWS_REGION is not set'),
  AWS_ENDPOINT_URL_BEDROCK_RUNTIME: url('another Bedrock Runtime endpoint (a VPC endpoint, tests)'),
  AWS_ENDPOINT_URL: url('another endpoint for every AWS service (a local emulator)'),
  STARRY_LOCAL_THREADS: count('llama.cpp CPU threads'),
  STARRY_LOCAL_CONTEXT: count('llama.cpp context size in tokens'),
  STARRY_LLAMA_RUNTIME: text('where node-llama-cpp is installed; default .tools/llama'),
  // Traces and metrics (workers/otel-env.ts checks the values): traces on only when an endpoint or
  // OTEL_TRACES_EXPORTER is set; metrics when an endpoint or OTEL_METRICS_EXPORTER is
  OTEL_SDK_DISABLED: text('true: no traces nor metrics, whatever else is set'),
  OTEL_TRACES_EXPORTER: text('otlp, console or none'),
  OTEL_EXPORTER_OTLP_ENDPOINT: text(
    'the OTLP collector: http/protobuf appends /v1/traces and /v1/metrics; grpc uses it as is (default port 4317)',
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: text('the OTLP traces URL (or gRPC endpoint), used as is'),
  OTEL_EXPORTER_OTLP_PROTOCOL: text('http/protobuf (default) or grpc'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: text('http/protobuf or grpc, for traces'),
  OTEL_EXPORTER_OTLP_HEADERS: text('key=value pairs sent with every export (API keys)'),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: text('key=value pairs sent with trace exports'),
  OTEL_EXPORTER_OTLP_TIMEOUT: text('export timeout in ms; default 10000'),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: text('trace export timeout in ms'),
  OTEL_EXPORTER_OTLP_COMPRESSION: text('gzip or none'),
  OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: text('gzip or none'),
  OTEL_TRACES_SAMPLER: text('always_on (default), always_off, traceidratio, parentbased_*'),
  OTEL_TRACES_SAMPLER_ARG: text('the share of tasks traced with traceidratio, 0 to 1'),
  OTEL_BSP_SCHEDULE_DELAY: text('ms between batch exports; default 5000'),
  OTEL_BSP_EXPORT_TIMEOUT: text('ms a batch export may take; default 30000'),
  OTEL_BSP_MAX_QUEUE_SIZE: text('spans kept waiting for export (beyond: dropped); default 2048'),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: text('spans per export; default 512'),
  OTEL_SERVICE_NAME: text('the service.name of the spans; default openstarry-worker'),
  OTEL_RESOURCE_ATTRIBUTES: text('key=value resource attributes, e.g. deployment.environment=prod'),
  OTEL_METRICS_EXPORTER: text('otlp, prometheus, console or none'),
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: text('the OTLP metrics URL (or gRPC endpoint), used as is'),
  OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: text('http/protobuf or grpc, for metrics'),
  OTEL_EXPORTER_OTLP_METRICS_HEADERS: text('key=value pairs sent with metric exports'),
  OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: text('metric export timeout in ms'),
  OTEL_EXPORTER_OTLP_METRICS_COMPRESSION: text('gzip or none'),
  OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: text('cumulative (default) or delta'),
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: text(
    'true: prompts, answers, tool arguments and results on the spans (default false: none)',
  ),
  OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: text(
    'explicit_bucket_histogram (default) or base2_exponential_bucket_histogram (CloudWatch percentiles)',
  ),
  OTEL_METRIC_EXPORT_INTERVAL: text('ms between metric pushes (OTLP, console); default 60000'),
  OTEL_METRIC_EXPORT_TIMEOUT: text('ms a metric push may take; default 30000 (at most the interval)'),
  OTEL_EXPORTER_PROMETHEUS_HOST: text('where OTEL_METRICS_EXPORTER=prometheus listens; default localhost'),
  OTEL_EXPORTER_PROMETHEUS_PORT: text('the port of its /metrics; default 9464'),
});

/** The name of a variable the worker reads. */
export type WorkerEnvName = keyof typeof WorkerEnvSchema.shape;
export type WorkerEnv = z.output<typeof WorkerEnvSchema>;

/** What a worker runs with. */
export interface WorkerConfig {
  temporal: TemporalEnv;
  taskQueue: string;
  /**
   * The tool activities' own task queue (`STARRY_TOOL_TASK_QUEUE`), when it is not `taskQueue`: the
   * workflows and LLM calls stay on `taskQueue`, tool code runs on tool workers (`starry worker --tools`).
   */
  toolTaskQueue?: string;
  policy: WorkerPolicy;
  /**
   * Where the policy's roots were set; absent: the default, a workspaces folder of its own
   * (`defaultWorkspaceRoot`, made at start), which a worker does not check for writability.
   */
  rootsFrom?: RootsSource;
  /**
   * The files the worker read its settings and credentials from (its policy, price table, TLS and
   * Google credential files): no workspace root may hold one (workers/own-paths.ts).
   */
  settingsFiles?: SettingsFile[];
  alerts: Pick<AlertSinks, 'webhookUrl' | 'snsTopicArn' | 'uiUrl'>;
  llm: LlmProviderOptions;
  workflowBundlePath?: string;
  /** The sticky cache's size (`STARRY_MAX_CACHED_WORKFLOWS`); absent: the SDK's default. */
  maxCachedWorkflows?: number;
  /** Workflow tasks the worker runs at once (`STARRY_MAX_CONCURRENT_WORKFLOW_TASKS`); absent: `DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS`. */
  maxConcurrentWorkflowTaskExecutions?: number;
  /** A tool worker's tool calls at once (`STARRY_MAX_CONCURRENT_TOOL_CALLS`); absent: the SDK's default. */
  maxConcurrentToolCalls?: number;
  /** Plugin modules (workers/plugins.ts): with them the worker bundles its workflows at start. */
  plugins?: string[];
  versioning: VersioningOptions;
  /** Absent: the worker does not trace (workers/otel.ts). */
  tracing?: TracingConfig;
  /** Absent: the worker process has no metrics (workers/metrics.ts). */
  metrics?: MetricsConfig;
  /** The worker's price table (`STARRY_PRICING`); absent: its tasks' calls cost nothing it knows of. */
  pricing?: PricingTable;
}

/**
 * Read and check the worker's environment.
 *
 * @throws ConfigError naming every invalid variable (and what it should hold).
 */
export function workerConfigFromEnv(raw: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): WorkerConfig {
  const present = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined && v.trim() !== ''));
  const parsed = WorkerEnvSchema.safeParse(present);
  if (!parsed.success) throw new ConfigError(`Invalid worker environment:\n${formatIssues(parsed.error)}`);
  const env = parsed.data;
  const plugins = env.STARRY_PLUGINS ? pluginList(env.STARRY_PLUGINS) : [];
  if (plugins.length && env.STARRY_WORKFLOW_BUNDLE)
    throw new ConfigError(
      'Invalid worker environment: STARRY_PLUGINS and STARRY_WORKFLOW_BUNDLE are both set, but a prebuilt bundle cannot hold ' +
        'the plugins (the worker bundles its workflows with them at start): unset one',
    );
  const { tracing, metrics } = telemetryConfigFromEnv(present);
  // Temporal and the providers read their variables from this checked copy, never from process.env again.
  const llmEnv: Record<string, string | undefined> = {
    ...env,
    STARRY_LOCAL_THREADS: env.STARRY_LOCAL_THREADS?.toString(),
    STARRY_LOCAL_CONTEXT: env.STARRY_LOCAL_CONTEXT?.toString(),
    STARRY_MAX_CACHED_WORKFLOWS: env.STARRY_MAX_CACHED_WORKFLOWS?.toString(),
    STARRY_MAX_CONCURRENT_WORKFLOW_TASKS: env.STARRY_MAX_CONCURRENT_WORKFLOW_TASKS?.toString(),
    STARRY_MAX_CONCURRENT_TOOL_CALLS: env.STARRY_MAX_CONCURRENT_TOOL_CALLS?.toString(),
  };
  const taskQueue = env.STARRY_TASK_QUEUE ?? 'openstarry';
  const toolTaskQueue = env.STARRY_TOOL_TASK_QUEUE;
  return {
    temporal: temporalEnv(llmEnv),
    taskQueue,
    ...(toolTaskQueue && toolTaskQueue !== taskQueue ? { toolTaskQueue } : {}),
    policy: withOwnLlmEndpoint(workerPolicy(env, cwd), openAiBaseUrl({ env: llmEnv })),
    ...rootsSource(env),
    settingsFiles: settingsFiles(env, cwd),
    alerts: { webhookUrl: env.STARRY_ALERT_WEBHOOK, snsTopicArn: env.STARRY_ALERT_TOPIC_ARN, uiUrl: env.STARRY_UI_URL },
    llm: {
      openai: { env: llmEnv },
      gemini: { env: llmEnv },
      bedrock: { env: llmEnv },
      local: { env: llmEnv },
    },
    ...(env.STARRY_WORKFLOW_BUNDLE ? { workflowBundlePath: env.STARRY_WORKFLOW_BUNDLE } : {}),
    ...(env.STARRY_MAX_CACHED_WORKFLOWS !== undefined ? { maxCachedWorkflows: env.STARRY_MAX_CACHED_WORKFLOWS } : {}),
    ...(env.STARRY_MAX_CONCURRENT_WORKFLOW_TASKS !== undefined
      ? { maxConcurrentWorkflowTaskExecutions: env.STARRY_MAX_CONCURRENT_WORKFLOW_TASKS }
      : {}),
    ...(env.STARRY_MAX_CONCURRENT_TOOL_CALLS !== undefined
      ? { maxConcurrentToolCalls: env.STARRY_MAX_CONCURRENT_TOOL_CALLS }
      : {}),
    ...(plugins.length ? { plugins } : {}),
    ...(tracing ? { tracing } : {}),
    ...(metrics ? { metrics } : {}),
    ...(env.STARRY_PRICING ? { pricing: workerPricing(env.STARRY_PRICING) } : {}),
    versioning: {
      ...(env.STARRY_DEPLOYMENT_NAME ? { deploymentName: env.STARRY_DEPLOYMENT_NAME } : {}),
      ...(env.STARRY_MAKE_CURRENT ? { makeCurrent: env.STARRY_MAKE_CURRENT } : {}),
    },
  };
}

/** The variables that hold an LLM provider's credentials: a tool worker refuses to start with any of them set. */
export const LLM_KEY_VARS = [
  'OPENAI_API_KEY',
  'STARRY_OPENAI_API_KEY',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'GOOGLE_APPLICATION_CREDENTIALS',
] as const satisfies readonly WorkerEnvName[];

/**
 * Read and check a tool worker's environment (`starry worker --tools`): it needs its own task queue,
 * and holds no LLM key. Removing a key from `process.env` would not do: the process's initial
 * environment stays readable in /proc/self/environ, so the key must never reach the process.
 *
 * ```ts
 * const config = toolWorkerConfigFromEnv(); // throws when OPENAI_API_KEY is set
 * ```
 *
 * @throws ConfigError naming the LLM keys present, or the missing `STARRY_TOOL_TASK_QUEUE`.
 */
export function toolWorkerConfigFromEnv(
  raw: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): WorkerConfig & { toolTaskQueue: string } {
  const keys = LLM_KEY_VARS.filter((name) => raw[name]?.trim());
  if (keys.length)
    throw new ConfigError(
      `a tool worker holds no LLM key, but ${keys.join(', ')} ${keys.length > 1 ? 'are' : 'is'} set in its environment: ` +
        `start it without ${keys.length > 1 ? 'them' : 'it'} (the workers without --tools make the LLM calls)`,
    );
  const config = workerConfigFromEnv(raw, cwd);
  if (!config.toolTaskQueue) {
    const now = raw.STARRY_TOOL_TASK_QUEUE?.trim() ? `the task queue (${config.taskQueue})` : 'not set';
    throw new ConfigError(
      `a tool worker polls the tool task queue, but STARRY_TOOL_TASK_QUEUE is ${now}: ` +
        `set it to a queue of its own on every worker (e.g. STARRY_TOOL_TASK_QUEUE=${config.taskQueue}-tools), or run \`starry worker\` without --tools`,
    );
  }
  return { ...config, toolTaskQueue: config.toolTaskQueue };
}

/** The files named by variables the worker reads settings or credentials from (a value that is not inline JSON or PEM). */
function settingsFiles(env: WorkerEnv, cwd: string): SettingsFile[] {
  const named: Array<[string, string | undefined, boolean]> = [
    ['its policy (STARRY_WORKER_POLICY)', env.STARRY_WORKER_POLICY, !env.STARRY_WORKER_POLICY?.startsWith('{')],
    ['its price table (STARRY_PRICING)', env.STARRY_PRICING, !env.STARRY_PRICING?.startsWith('{')],
    ['its TLS certificate (TEMPORAL_TLS_CERT)', env.TEMPORAL_TLS_CERT, !env.TEMPORAL_TLS_CERT?.includes('-----BEGIN')],
    ['its TLS key (TEMPORAL_TLS_KEY)', env.TEMPORAL_TLS_KEY, !env.TEMPORAL_TLS_KEY?.includes('-----BEGIN')],
    ['its Google credentials (GOOGLE_APPLICATION_CREDENTIALS)', env.GOOGLE_APPLICATION_CREDENTIALS, true],
  ];
  return named.flatMap(([what, value, isFile]) => (value && isFile ? [{ what, path: path.resolve(cwd, value) }] : []));
}

/** Where the roots come from: the policy, `STARRY_WORKSPACE_ROOTS` (when it names one), or the defaults. */
function rootsSource(env: WorkerEnv): { rootsFrom?: RootsSource } {
  if (env.STARRY_WORKER_POLICY) return { rootsFrom: 'STARRY_WORKER_POLICY' };
  if (env.STARRY_WORKSPACE_ROOTS?.split(':').some(Boolean)) return { rootsFrom: 'STARRY_WORKSPACE_ROOTS' };
  return {};
}

/**
 * Check, at the start of a worker that runs tool calls, that every root its operator configured is a
 * directory this process can write (it creates and removes a directory in each: permission bits,
 * read-only mounts and a file system's own access rules all answer). Default roots are not checked: the
 * working directory and the project folder exist, and the latter may be read-only (an installed package).
 *
 * ```ts
 * await checkWorkspaceRoots(workerConfigFromEnv()); // throws when /workspaces is not mounted
 * ```
 *
 * @throws ConfigError naming each unusable root and what to do.
 */
export async function checkWorkspaceRoots(config: Pick<WorkerConfig, 'policy' | 'rootsFrom'>): Promise<void> {
  if (!config.rootsFrom) return;
  const problems = (await Promise.all(config.policy.roots.map(rootProblem))).filter((p) => p !== undefined);
  const refusal = unusableRootsRefusal(problems, config.rootsFrom);
  if (refusal) throw new ConfigError(refusal);
}

async function rootProblem(root: string): Promise<RootProblem | undefined> {
  const problem = (text: string) => ({ root, problem: text });
  let stat;
  try {
    stat = await fs.stat(root);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return problem(code === 'ENOENT' ? 'does not exist' : `cannot be opened (${code ?? (err as Error).message})`);
  }
  if (!stat.isDirectory()) return problem('is not a directory');
  try {
    await fs.rmdir(await fs.mkdtemp(path.join(root, '.starry-start-check-')));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return problem(
      `is not writable by this worker's user (uid ${process.getuid?.() ?? '?'}: ${code ?? (err as Error).message})`,
    );
  }
  return undefined;
}

/**
 * The worker's price table from `STARRY_PRICING`: JSON inline, or the path of a JSON file.
 *
 * @throws ConfigError naming the file that cannot be read, or each bad entry (a negative or missing price).
 */
function workerPricing(raw: string): PricingTable {
  const { json, origin } = jsonOrFile('STARRY_PRICING', raw);
  return parsePricing(json, origin);
}

/**
 * A variable holding JSON inline (`{…}`) or the path of a JSON file, parsed; `origin` names it in errors.
 *
 * @throws ConfigError naming the variable (and the file) that cannot be read or parsed.
 */
function jsonOrFile(name: string, raw: string): { json: unknown; origin: string } {
  const inline = raw.startsWith('{');
  const origin = inline ? name : `${name} file ${raw}`;
  try {
    return { json: JSON.parse(inline ? raw : readFileSync(raw, 'utf8')), origin };
  } catch (err) {
    throw new ConfigError(
      `Cannot read ${origin}: ${(err as Error).message}. Give a JSON object or the path of a JSON file.`,
    );
  }
}

/** Loopback on any port: where a developer runs llama.cpp, Ollama or vLLM. */
const LOCAL_LLM_HOSTS = ['127.0.0.1:*', 'localhost:*', '[::1]:*'];

/**
 * The worker's own OpenAI-compatible endpoint (where its key goes) is one a task may always name: the
 * policy's `llmAllow` gains its host.
 */
function withOwnLlmEndpoint(policy: WorkerPolicy, baseUrl: string): WorkerPolicy {
  const { host } = new URL(baseUrl);
  return policy.llmAllow.includes(host) ? policy : { ...policy, llmAllow: [...policy.llmAllow, host] };
}

/**
 * The policy (core/worker-policy.ts): `STARRY_WORKER_POLICY`, or else the roots `STARRY_WORKSPACE_ROOTS`
 * or a workspaces folder of the worker's own (`workspaces/` in the project: never the project folder,
 * which holds the worker's code), scripts and models read from the working directory and the project
 * (its examples, `.tools/models`), the default shell allow-list, no HTTP host, LLM servers on this
 * machine (llama.cpp, Ollama, vLLM), a 1 MiB output cap. `STARRY_TOOLS_ALLOW_ROOT` overrides the policy's `allowRoot` (default: `shell.run` drops
 * to `nobody` when the worker is root).
 */
function workerPolicy(env: WorkerEnv, cwd: string): WorkerPolicy {
  // Without a policy the worker is a developer's: LLM servers on this machine may be named (they get no key).
  const raw = env.STARRY_WORKER_POLICY;
  let policy: unknown;
  if (raw) {
    policy = jsonOrFile('STARRY_WORKER_POLICY', raw).json;
  } else {
    const roots = env.STARRY_WORKSPACE_ROOTS?.split(':')
      .filter(Boolean)
      .map((r) => path.resolve(cwd, r));
    policy = {
      roots: roots?.length ? roots : [defaultWorkspaceRoot()],
      llmDirs: [...new Set([path.resolve(cwd), projectRoot()])],
      llmAllow: LOCAL_LLM_HOSTS,
    };
  }
  const parsed = parseWorkerPolicy(policy, raw ? 'STARRY_WORKER_POLICY' : 'worker policy');
  if (env.STARRY_TOOLS_ALLOW_ROOT !== undefined) return { ...parsed, allowRoot: env.STARRY_TOOLS_ALLOW_ROOT === '1' };
  return parsed;
}
