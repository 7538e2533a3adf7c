import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';

/** One file of the built console, held in memory with what its answer needs. */
export interface ConsoleFile {
  body: Buffer;
  type: string;
  etag: string;
  /** Vite names assets by their content's hash: they never change, so they may be cached for good. */
  immutable: boolean;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

/** A console build is a few hundred KiB; a tree past this is not one, and is not loaded. */
const MAX_TOTAL_BYTES = 32 * 1024 * 1024;

/**
 * Every file under `dir` by its URL path below /console/ ("index.html", "assets/index-3f2a.js"),
 * read once at start. Requests are answered from this map only, so no request path ever reaches
 * the file system (no `..`, no symbolic link, no file written after start is served). Files of a
 * type not listed above are left out. An absent directory is an empty console.
 */
export function loadConsoleFiles(dir: string): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  let total = 0;
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) {
        walk(path);
        continue;
      }
      const type = TYPES[extname(entry.name)];
      if (!entry.isFile() || !type) continue;
      total += statSync(path).size;
      if (total > MAX_TOTAL_BYTES) throw new Error(`the console build in ${dir} is larger than ${MAX_TOTAL_BYTES} bytes`);
      const body = readFileSync(path);
      const urlPath = relative(dir, path).split(sep).join('/');
      files.set(urlPath, {
        body,
        type,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
        immutable: urlPath.startsWith('assets/'),
      });
    }
  };
  try {
    walk(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return files;
}
