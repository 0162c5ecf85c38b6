/**
 * What an MCP server is given of the worker's environment: a stdio server's environment is its sandbox's
 * own (PATH, HOME, LANG) and its config's `env`, an HTTP server's headers its config's; `${env:NAME}` in
 * either is filled from the worker's environment (which variables a config may use there is the
 * policy's to say, core/worker-policy/), and no config may set a variable that changes how code loads.
 */
import type { McpServerConfig } from '../../core/config';
import { ToolError } from '../../core/errors/activity';
import { ENV_TEMPLATE, changesCodeLoading } from '../../core/worker-policy';
import { SANDBOX_PATH } from './confine';

/**
 * A stdio server's environment: the sandbox's PATH, HOME and LANG, then its config's `env` with its
 * templates filled. @throws ToolError for a variable that changes how the server loads code.
 */
export function serverEnv(
  server: string,
  config: Extract<McpServerConfig, { command: string }>,
  home: string,
  workerEnv: NodeJS.ProcessEnv,
): Record<string, string> {
  const env: Record<string, string> = { PATH: SANDBOX_PATH.join(':'), HOME: home, LANG: 'C.UTF-8' };
  for (const [name, template] of Object.entries(config.env ?? {})) {
    if (changesCodeLoading(name)) {
      throw ToolError.of({
        code: 'E_INTERNAL',
        kind: 'fatal',
        source: `mcp ${server}`,
        message: `Refused by the worker's policy: tools.mcp.${server}.env sets ${name}, which changes how the server loads code; no config may set it`,
        suggestion: `Remove ${name} from tools.mcp.${server}.env.`,
      });
    }
    env[name] = fillTemplate(template, workerEnv, `tools.mcp.${server}.env.${name}`);
  }
  return env;
}

/** An HTTP server's request headers: its config's, with their templates filled. */
export function serverHeaders(
  server: string,
  config: Extract<McpServerConfig, { url: string }>,
  workerEnv: NodeJS.ProcessEnv,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, template] of Object.entries(config.headers ?? {})) {
    headers[name] = fillTemplate(template, workerEnv, `tools.mcp.${server}.headers.${name}`);
  }
  return headers;
}

/**
 * Fill `${env:NAME}` from env; a missing variable is a ToolError E_AUTH kind 'fatal' naming the variable
 * and the server (never the value). `where` says what the template is, e.g. `tools.mcp.github.headers.Authorization`;
 * the server of such a path becomes the error's source.
 *
 * ```ts
 * fillTemplate('Bearer ${env:GH_TOKEN}', { GH_TOKEN: 'abc' }, 'tools.mcp.github.headers.Authorization') // 'Bearer abc'
 * ```
 */
export function fillTemplate(template: string, env: NodeJS.ProcessEnv, where: string): string {
  return template.replace(ENV_TEMPLATE, (_match, name: string) => {
    const value = env[name];
    if (value !== undefined) return value;
    const server = /^tools\.mcp\.([^.]+)/.exec(where)?.[1];
    throw ToolError.of({
      code: 'E_AUTH',
      kind: 'fatal',
      source: server !== undefined ? `mcp ${server}` : 'mcp',
      message: `${where} uses \${env:${name}}, but ${name} is not set in the worker's environment${server !== undefined ? ` (MCP server '${server}')` : ''}`,
      suggestion: `Set ${name} in the environment of the worker that runs this task.`,
    });
  });
}
