/**
 * A tiny MCP server (stdio) with two tools, `add` and `list`, that keep notes in a JSON file. The agent
 * config names it `notes`, so the model sees `notes.add` and `notes.list`; the worker starts it (`node
 * dist/notes-server.mjs`, which its policy must allow: an `mcpCommands` entry for `node` that shows the
 * server's folder and node_modules read-only in its sandbox) the first time a task needs it. An ES module
 * because the SDK's typings are ES modules.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

// Where the notes live: the agent config passes the path (`tools.mcp.notes.env`), so the example can
// show what the server kept; the server's working directory (the task's workspace) otherwise.
const file = process.env.NOTES_FILE ?? 'notes.json';

function load(): string[] {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as string[]) : [];
}

const server = new McpServer({ name: 'notes', version: '1.0.0' });

server.registerTool(
  'add',
  {
    description: 'Save a note.',
    inputSchema: { text: z.string().min(1).max(2000).describe('The note, as plain text.') },
  },
  ({ text }) => {
    const notes = [...load(), text];
    writeFileSync(file, `${JSON.stringify(notes, null, 2)}\n`);
    return { content: [{ type: 'text', text: `saved note #${notes.length}` }] };
  },
);

server.registerTool('list', { description: 'List the saved notes, oldest first.' }, () => {
  const notes = load();
  const text = notes.length ? notes.map((n, i) => `${i + 1}. ${n}`).join('\n') : 'no notes yet';
  return { content: [{ type: 'text', text }] };
});

// stdout is the protocol's channel: nothing else may write to it.
await server.connect(new StdioServerTransport());
