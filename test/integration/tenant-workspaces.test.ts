/**
 * Tenants own their workspaces and transcripts (docs/ARCHITECTURE.md, "Tenants"): a tenant's tasks use
 * only its part of the worker's roots (`<root>/<tenant>/…`), over the HTTP API as anywhere; a task that
 * names another tenant's path, as its workspace or its script, is refused at submit like any path
 * outside the policy; and its transcript lies in the tenant's own space of the content store, which no
 * root holds. The attack this replays: tenant t2 read t1's `notes.md` and planted a file in t1's
 * workspace by naming it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { createApp } from '../../api/app';
import { authenticator, devToken, type Role } from '../../api/auth';
import { BlobMissingError, storeFromEnv } from '../../activities/store';
import {
  makeWorkspace,
  scriptedConfig,
  startHarness,
  tenantDir,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { done, turn } from '../helpers/scenarios';

const SECRET = 'tenant-workspaces-secret-at-least-32-characters';
const CLAIM = 'tenant';
let h: Harness;
let server: ServerType;
let base: string;
const t1 = uniqueId('t1');
const t2 = uniqueId('t2');

beforeAll(async () => {
  h = await startHarness({ name: 'tenant-workspaces' });
  const app = createApp({ agents: async () => h.agents, auth: authenticator({ secret: SECRET, tenantClaim: CLAIM }) });
  server = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const a = server.address();
  base = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await h?.stop();
});

/** POST a task as an operator of `tenant`; the answer's status and JSON. */
async function submit(
  tenant: string,
  agentId: string,
  body: unknown,
): Promise<{ status: number; json: Record<string, string> }> {
  const token = await devToken({
    secret: SECRET,
    sub: `op-${tenant}`,
    roles: ['operator' as Role],
    claims: { [CLAIM]: tenant },
  });
  const res = await fetch(`${base}/v1/agents/${agentId}/tasks?wait=60`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, string> };
}

describe("a tenant's workspaces and transcripts", () => {
  it("runs a tenant's task in its part of the roots, made by the first call, its transcript in its own space", async () => {
    const workspace = path.join(os.tmpdir(), t1, 'app');
    const script = writeScript(
      [turn({ name: 'fs.write', args: { path: 'notes.md', content: 't1 only' } }), done('written')],
      tenantDir(t1),
    );
    const a = await submit(t1, 'writer', { goal: 'write', config: scriptedConfig(script, workspace) });
    expect(a.status).toBe(200);
    expect(a.json).toMatchObject({ outcome: 'COMPLETED', finalText: 'written' });
    expect(readFileSync(path.join(workspace, 'notes.md'), 'utf8')).toBe('t1 only');

    // The transcript's blobs are keyed by the tenant: found in its space, missing from the shared one.
    const result = await h.agents.forTenant(t1).waitForTask('writer', a.json.taskId as string);
    const manifest = result.transcript?.manifest as string;
    const store = storeFromEnv();
    expect(JSON.parse((await store.get(manifest, t1)).toString()).v).toBe(1);
    await expect(store.get(manifest)).rejects.toBeInstanceOf(BlobMissingError);
    await expect(store.get(manifest, t2)).rejects.toBeInstanceOf(BlobMissingError);
    expect(readdirSync(path.join(store.dir as string, 'tenants', t1)).length).toBeGreaterThan(0);
  });

  it("refuses at submit a task naming another tenant's workspace or script, or the roots themselves, and runs nothing", async () => {
    const victim = path.join(tenantDir(t1), 'app');
    const refusals = [
      {
        workspace: victim,
        script: writeScript([done()], tenantDir(t2)),
        says: `workspace: '${victim}' is not inside tenant ${t2}'s part`,
      },
      { workspace: os.tmpdir(), script: writeScript([done()], tenantDir(t2)), says: 'is not inside tenant' },
      // A workspace made elsewhere in the roots (any plain agent's) is no tenant's.
      { workspace: makeWorkspace(), script: writeScript([done()], tenantDir(t2)), says: 'is not inside tenant' },
      {
        workspace: path.join(tenantDir(t2), 'mine'),
        script: writeScript([turn({ name: 'fs.write', args: { path: 'planted.md', content: 'x' } })], tenantDir(t1)),
        says: `llm: the script '${tenantDir(t1)}`,
      },
    ];
    for (const r of refusals) {
      const a = await submit(t2, uniqueId('intruder'), {
        goal: 'read t1',
        config: scriptedConfig(r.script, r.workspace),
      });
      expect(a.status).toBe(409);
      expect(a.json.detail).toContain(r.says);
    }
    expect(existsSync(path.join(victim, 'planted.md'))).toBe(false);
  });
});
