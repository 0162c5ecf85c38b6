/**
 * An MCP server's tools and answers as the model sees them: each tool as a `<server>.<tool>` spec, and a
 * call's content as text (placeholders for images and other binary blocks, so no base64 ever reaches the
 * model or the history).
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolSpec } from '../../core/llm';
import { isValidToolName } from '../../core/tools';

const MAX_DESCRIPTION_CHARS = 1024;

/** A tool as offered to the model, or undefined when its name cannot be a tool name of ours. */
export function toolSpec(server: string, tool: Tool): ToolSpec | undefined {
  const name = `${server}.${tool.name}`;
  if (!isValidToolName(name)) return undefined;
  const { $schema: _dialect, ...parameters } = tool.inputSchema as Record<string, unknown>;
  const description =
    tool.description || tool.title || tool.annotations?.title || `MCP tool ${tool.name} of server ${server}`;
  return { name, description: description.slice(0, MAX_DESCRIPTION_CHARS), parameters };
}

/** One content block, as the model sees it: text as is, anything else as a short placeholder. */
function contentItem(item: unknown): { text: string; isText: boolean } {
  const block = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  switch (block.type) {
    case 'text':
      return { text: str(block.text) ?? '', isText: true };
    case 'image':
    case 'audio':
      return {
        text: `[${block.type} ${str(block.mimeType) ?? 'unknown type'}, ${Buffer.byteLength(str(block.data) ?? '', 'base64')} bytes]`,
        isText: false,
      };
    case 'resource_link':
      return {
        text: `[resource link ${str(block.uri) ?? ''}${block.mimeType ? ` ${str(block.mimeType)}` : ''}]`,
        isText: false,
      };
    case 'resource': {
      const res = (typeof block.resource === 'object' && block.resource !== null ? block.resource : {}) as Record<
        string,
        unknown
      >;
      const head = `resource ${str(res.uri) ?? ''}${res.mimeType ? ` ${str(res.mimeType)}` : ''}`;
      // Embedded text is data the model asked for; a blob is bytes it cannot read.
      if (typeof res.text === 'string') return { text: `[${head}]\n${res.text}`, isText: false };
      return { text: `[${head}, ${Buffer.byteLength(str(res.blob) ?? '', 'base64')} bytes]`, isText: false };
    }
    default:
      return { text: `[${String(block.type ?? 'unknown')} content]`, isText: false };
  }
}

/**
 * A tool's result for the model: all-text content becomes one string; structured content without text is
 * returned as is; otherwise `{ content, structuredContent? }` with every block as text (placeholders for
 * images and other binary blocks, so no base64 ever reaches the model or the history).
 */
export function resultData(content: unknown, structuredContent: unknown): unknown {
  const items = (Array.isArray(content) ? content : []).map(contentItem);
  const hasText = items.some((i) => i.isText);
  if (structuredContent !== undefined && !hasText) return structuredContent;
  if (items.every((i) => i.isText)) return items.map((i) => i.text).join('\n');
  return { content: items.map((i) => i.text), ...(structuredContent !== undefined ? { structuredContent } : {}) };
}

/** The content of an answer as one text, each block as `resultData` shows it. */
export function contentText(content: unknown): string {
  return (Array.isArray(content) ? content : [])
    .map(contentItem)
    .map((i) => i.text)
    .join('\n')
    .trim();
}
