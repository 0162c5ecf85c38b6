/**
 * The policy's rules for environment variables a config gives its MCP servers: none that changes what
 * code a program loads, and `${env:NAME}` templates, filled on the worker from its own environment.
 */

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

/** `${env:NAME}` in an MCP server's env or header value: filled on the worker from its environment. */
export const ENV_TEMPLATE = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g;
/** A value that is one `${env:NAME}` and nothing else: the worker's value, under the name the server reads. */
export const WHOLE_TEMPLATE = /^\$\{env:[A-Za-z_][A-Za-z0-9_]*\}$/;
