/**
 * The policy's paths: absolute POSIX paths, normalized when the policy is read and compared lexically
 * (the tool activity compares the real paths it opened again).
 */
import { z } from 'zod';

/** An absolute path of the policy, normalized (`/srv/ws/../x/` is `/srv/x`). */
export const absolutePath = z
  .string()
  .min(1)
  .refine((p) => p.startsWith('/') && !p.includes('\0'), { message: 'must be an absolute path' })
  .transform(normalizePosix);

/** True when `child` is `root` or below it; both normalized absolute POSIX paths. */
export function isWithin(child: string, root: string): boolean {
  return child === root || root === '/' || child.startsWith(`${root}/`);
}

/** True when `file` is an absolute path inside one of `dirs` (lexically). */
export function absoluteWithin(file: string, dirs: readonly string[]): boolean {
  return file.startsWith('/') && !file.includes('\0') && dirs.some((dir) => isWithin(normalizePosix(file), dir));
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
