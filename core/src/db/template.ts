/**
 * The migrated PGlite data-directory template shipped with the core (`pglite_template.tar.gz`). A first
 * start on an empty data directory unpacks it with native file writes (npm `nanotar` reads the tarball)
 * instead of running PGlite's initdb (seconds of WebAssembly work) or letting PGlite unpack it through its
 * emulated file system (about as slow), then applies any migration newer than the template as usual. Regenerate it with
 * `deno task gen:pglite-template` after adding a migration or changing the PGlite version; a template that
 * does not load is ignored (initdb runs instead), so a stale one is slower, never wrong. Building one is
 * template_build.ts's (this module stays free of the database layer: the PGlite worker unpacks with it).
 *
 * @module
 */
import { gunzipSync } from "node:zlib";
import { parseTar } from "nanotar";

export const TEMPLATE_URL = new URL("./pglite_template.tar.gz", import.meta.url);

/** The shipped template, or null when it is missing or not readable. */
export async function loadTemplate(): Promise<Blob | null> {
  try {
    return new Blob([await Deno.readFile(TEMPLATE_URL)], { type: "application/x-gzip" });
  } catch {
    return null;
  }
}

/** The sibling directory {@link unpackTemplate} writes into before renaming it to `path`. */
const stagingOf = (path: string) => `${path}.new`;

/**
 * Remove a data directory `path` made (or being made) from the template, with the staging directory an
 * interrupted unpack leaves: what a first start that does not go on clears.
 */
export async function removeUnpacked(path: string): Promise<void> {
  for (const p of [path, stagingOf(path)]) await Deno.remove(p, { recursive: true }).catch(() => {});
}

/**
 * Unpack the shipped template as the PGlite data directory `path` (which must not exist): into a sibling
 * directory first, renamed into place when complete, so an interrupted first start leaves no half data
 * directory. Returns false when no template is shipped; throws when it cannot be unpacked.
 */
export async function unpackTemplate(path: string): Promise<boolean> {
  let gz: Uint8Array;
  try {
    gz = await Deno.readFile(TEMPLATE_URL);
  } catch {
    return false;
  }
  const tmp = stagingOf(path);
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
  await Deno.mkdir(tmp, { recursive: true, mode: 0o700 });
  // node:zlib inflates the 41 MB in one native call into one buffer (one chunk: no concatenation), about
  // four times faster than a DecompressionStream.
  const items = parseTar(gunzipSync(gz, { chunkSize: 64 * 1024 * 1024 }));
  const files: Array<{ name: string; data: Uint8Array }> = [];
  const dirs = new Set<string>();
  for (const item of items) {
    const name = item.name.replace(/^\/+/, "").replace(/\/+$/, "");
    if (!name || name.split("/").some((p) => p === ".." || p === ".")) {
      throw new Error(`Unsafe path in the database template: ${item.name}`);
    }
    if (name === "postmaster.pid") continue; // the lock of the process that made the template
    if (item.type === "directory") dirs.add(name);
    else if (item.type === "file") {
      files.push({ name, data: item.data ?? new Uint8Array() });
      if (name.includes("/")) dirs.add(name.slice(0, name.lastIndexOf("/")));
    } else {
      throw new Error(`Unexpected ${item.type} entry in the database template: ${item.name}`);
    }
  }
  // Parents before children (sorted), then the thousand files written one after the other: synchronous
  // writes into the page cache (30-50 ms in all here) beat as many concurrent writes through the thread pool.
  for (const dir of [...dirs].sort()) Deno.mkdirSync(`${tmp}/${dir}`, { recursive: true, mode: 0o700 });
  for (const f of files) writeSparse(`${tmp}/${f.name}`, f.data);
  await Deno.rename(tmp, path);
  return true;
}

/**
 * Write `data` to a new file, its trailing zero bytes as a hole (a truncate, not a write): the 16 MiB WAL
 * segment is mostly zeros, and a hole reads back as zeros.
 */
function writeSparse(path: string, data: Uint8Array): void {
  let end = data.length;
  // Whole 32-bit words first (tar members start on 512-byte boundaries), then single bytes.
  if (data.byteOffset % 4 === 0) {
    const words = new Uint32Array(data.buffer, data.byteOffset, data.length >> 2);
    if (end === words.length * 4) {
      let w = words.length;
      while (w > 0 && words[w - 1] === 0) w--;
      end = w * 4;
    }
  }
  while (end > 0 && data[end - 1] === 0) end--;
  Deno.writeFileSync(path, data.subarray(0, end), { mode: 0o600 });
  if (end < data.length) Deno.truncateSync(path, data.length);
}
