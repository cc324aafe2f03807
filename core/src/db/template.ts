/**
 * The migrated PGlite data-directory template shipped with the core (`pglite_template.tar.gz`). A first
 * start on an empty data directory unpacks it with native file writes (npm `nanotar` reads the tarball)
 * instead of running PGlite's initdb (seconds of WebAssembly work) or letting PGlite unpack it through its
 * emulated file system (about as slow), then applies any migration newer than the template as usual. Regenerate it with
 * `deno task gen:pglite-template` after adding a migration or changing the PGlite version; a template that
 * does not load is ignored (initdb runs instead), so a stale one is slower, never wrong.
 *
 * @module
 */
import { parseTarGzip } from "nanotar";
import { migrate, openDatabase } from "./open.ts";

export const TEMPLATE_URL = new URL("./pglite_template.tar.gz", import.meta.url);

/** The shipped template, or null when it is missing or not readable. */
export async function loadTemplate(): Promise<Blob | null> {
  try {
    return new Blob([await Deno.readFile(TEMPLATE_URL)], { type: "application/x-gzip" });
  } catch {
    return null;
  }
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
  const tmp = `${path}.new`;
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
  await Deno.mkdir(tmp, { recursive: true, mode: 0o700 });
  for (const item of await parseTarGzip(gz)) {
    const name = item.name.replace(/^\/+/, "").replace(/\/+$/, "");
    if (!name || name.split("/").some((p) => p === ".." || p === ".")) {
      throw new Error(`Unsafe path in the database template: ${item.name}`);
    }
    if (name === "postmaster.pid") continue; // the lock of the process that made the template
    if (item.type === "directory") {
      await Deno.mkdir(`${tmp}/${name}`, { recursive: true, mode: 0o700 });
    } else if (item.type === "file") {
      await Deno.mkdir(`${tmp}/${name.split("/").slice(0, -1).join("/")}`, { recursive: true, mode: 0o700 });
      await Deno.writeFile(`${tmp}/${name}`, item.data ?? new Uint8Array(), { mode: 0o600 });
    } else {
      throw new Error(`Unexpected ${item.type} entry in the database template: ${item.name}`);
    }
  }
  await Deno.rename(tmp, path);
  return true;
}

/** Build a template: an in-memory PGlite, every migration applied, dumped as a gzipped tarball. */
export async function buildTemplate(): Promise<{ bytes: Uint8Array; migrations: string[] }> {
  const db = await openDatabase({});
  try {
    const migrations = await migrate(db.kysely);
    const blob = await db.dumpDataDir!("gzip");
    return { bytes: new Uint8Array(await blob.arrayBuffer()), migrations };
  } finally {
    await db.close();
  }
}
