import { DISK_BLOCK, capBroken, describeDiskCap, entryBytes, fsGrowth, grewOver, totalPlan, writeGrowth } from './disk';
import { parseWorkerPolicy } from './worker-policy';

const limits = parseWorkerPolicy({ roots: ['/w'], limits: { workspaceBytes: 40_960, tenantBytes: 102_400 } }).limits;

describe('entryBytes: what one entry counts', () => {
  it('is its size in whole 4 KiB blocks, at least one: an empty file, a directory, a fifo are never free', () => {
    expect(entryBytes(0)).toBe(DISK_BLOCK);
    expect(entryBytes(1)).toBe(4096);
    expect(entryBytes(4096)).toBe(4096);
    expect(entryBytes(4097)).toBe(8192);
    expect(entryBytes(1_000_000)).toBe(1_003_520);
  });

  it('makes 100,000 directories about 400 MB, as they take on ext4', () => {
    expect(100_000 * entryBytes(4096)).toBe(409_600_000);
  });
});

describe('writeGrowth: what a write adds', () => {
  it('counts a new file and each directory it creates', () => {
    expect(writeGrowth({ size: 0, newDirs: 0 })).toBe(4096);
    expect(writeGrowth({ size: 0, newDirs: 3 })).toBe(16_384);
    expect(writeGrowth({ size: 5000, newDirs: 1 })).toBe(12_288);
  });

  it('counts only the blocks an existing file gains, and is negative when it shrinks', () => {
    expect(writeGrowth({ existing: 100, size: 200, newDirs: 0 })).toBe(0);
    expect(writeGrowth({ existing: 4000, size: 4100, newDirs: 0 })).toBe(4096);
    expect(writeGrowth({ existing: 9000, size: 10, newDirs: 0 })).toBe(-8192);
  });
});

describe('grewOver and capBroken: which cap a change breaks', () => {
  it('holds a change that grew a total past its cap, not one that left it over but smaller', () => {
    expect(grewOver(900, 1100, 1000)).toBe(true);
    expect(grewOver(900, 1000, 1000)).toBe(false);
    expect(grewOver(1500, 1200, 1000)).toBe(false);
    expect(grewOver(1500, 1500, 1000)).toBe(false);
  });

  it('names the workspace first, then the tenant, and nothing for a write that does not grow', () => {
    expect(capBroken({ workspace: 36_864, tenant: 0, growth: 8192 }, limits)).toBe('workspace');
    expect(capBroken({ workspace: 4096, tenant: 98_304, growth: 8192 }, limits)).toBe('tenant');
    expect(capBroken({ workspace: 4096, tenant: 94_208, growth: 8192 }, limits)).toBeUndefined();
    expect(capBroken({ workspace: 4096, growth: 8192 }, limits)).toBeUndefined();
    expect(capBroken({ workspace: 90_000, tenant: 200_000, growth: 0 }, limits)).toBeUndefined();
  });
});

describe('fsGrowth: when a running program is measured', () => {
  it('counts the blocks taken and a block per inode', () => {
    const from = { usedBytes: 1_000_000, usedFiles: 50 };
    expect(fsGrowth(from, { usedBytes: 1_004_096, usedFiles: 51 })).toBe(8192);
    expect(fsGrowth(from, { usedBytes: 1_000_000, usedFiles: 60 })).toBe(40_960);
    expect(fsGrowth(from, { usedBytes: 900_000, usedFiles: 50 })).toBe(-100_000);
  });
});

describe("totalPlan: what a call does with the tenant space's total it knows", () => {
  const age = { ttlMs: 30_000, freshMs: 5_000 };
  const now = 1_000_000;

  it('measures a space it does not know', () => {
    expect(totalPlan(undefined, now, 'estimate', age)).toBe('measure');
    expect(totalPlan(undefined, now, 'confirm', age)).toBe('measure');
  });

  it('uses a total younger than the TTL, and refreshes an older one meanwhile', () => {
    expect(totalPlan({ bytes: 1, measuredAt: now - 10_000 }, now, 'estimate', age)).toBe('use');
    expect(totalPlan({ bytes: 1, measuredAt: now - 30_001 }, now, 'estimate', age)).toBe('refresh');
  });

  it('decides a refusal on a measure at most freshMs old', () => {
    expect(totalPlan({ bytes: 1, measuredAt: now - 4_000 }, now, 'confirm', age)).toBe('use');
    expect(totalPlan({ bytes: 1, measuredAt: now - 5_001 }, now, 'confirm', age)).toBe('measure');
  });
});

describe('describeDiskCap', () => {
  it("names the workspace's cap as describeLimit does", () => {
    expect(describeDiskCap('workspace', limits, 'acme')).toEqual({
      limit: "the workspace's disk limit (limits.workspaceBytes: 40 KiB for all its files and directories)",
      suggestion: 'Remove files the task no longer needs, or write less.',
      holder: 'the workspace',
    });
  });

  it("names a tenant's cap with the tenant, and a plain agent's as the roots'", () => {
    expect(describeDiskCap('tenant', limits, 'acme')).toEqual({
      limit: "the tenant's disk limit (limits.tenantBytes: 100 KiB for all the workspaces of tenant acme together)",
      suggestion:
        "Remove files this task or another agent of tenant acme no longer needs; the worker's operator can raise limits.tenantBytes.",
      holder: 'the workspaces of tenant acme',
    });
    expect(describeDiskCap('tenant', limits, undefined)).toMatchObject({
      limit:
        "the disk limit of the worker's roots (limits.tenantBytes: 100 KiB for all the workspaces under them together)",
      holder: "the workspaces under the worker's roots",
    });
  });
});
