/**
 * Reading an evidence bundle (docs/reports.md "Evidence bundle"): the archive's files, its manifest checked, and the
 * replay inputs parsed from `inputs/` and `payloads/`. No database: `verify_report.ts --replay` bundles
 * this file.
 *
 * @module
 */
import { parseTarGzip } from "nanotar";
import { sha256Hex } from "../util/hash.ts";
import type { ReplayInputs } from "./replay.ts";

/** The manifest's name: `sha256sum -c SHA256SUMS` checks every other file of the bundle. */
export const MANIFEST = "SHA256SUMS";

/** The files of a bundle by their path inside its top folder (`report.json`, `payloads/<sha>.json` …). */
export type BundleFiles = Map<string, Uint8Array>;

const dec = new TextDecoder("utf-8", { fatal: true });
export const text = (files: BundleFiles, path: string): string | undefined => {
  const b = files.get(path);
  return b === undefined ? undefined : dec.decode(b);
};

/**
 * The files of a `.tar.gz` bundle, with the top folder (`evidence-<id>/`) taken off their paths.
 *
 * @example
 * ```ts
 * // A downloaded bundle (the example type-checks and is not run):
 * async function example(path: string) {
 *   const files = await readBundleArchive(await Deno.readFile(path)); // e.g. "evidence.tar.gz"
 *   console.log([...files.keys()]); // ["README.txt", "SHA256SUMS", "report.json", …]
 * }
 * ```
 */
export async function readBundleArchive(bytes: Uint8Array): Promise<BundleFiles> {
  const items = await parseTarGzip(bytes);
  const files: BundleFiles = new Map();
  for (const i of items) {
    if (i.type !== undefined && i.type !== "file") continue;
    if (!i.data) continue;
    files.set(i.name.replace(/^[^/]+\//, ""), i.data);
  }
  return files;
}

/** One finding of the manifest check: a file whose SHA-256 differs, is missing, or is not listed. */
export interface ManifestFinding {
  path: string;
  ok: boolean;
  detail: string;
}

/** Check every file against `SHA256SUMS` (the `sha256sum` format: `<hex>  <path>` per line). */
export async function checkManifest(files: BundleFiles): Promise<ManifestFinding[]> {
  const list = text(files, MANIFEST);
  if (list === undefined) return [{ path: MANIFEST, ok: false, detail: "missing" }];
  const out: ManifestFinding[] = [];
  const listed = new Set<string>();
  for (const l of list.split("\n")) {
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(l);
    if (!m) continue;
    const [, sha, path] = m as unknown as [string, string, string];
    listed.add(path);
    const b = files.get(path);
    if (!b) out.push({ path, ok: false, detail: "listed but missing" });
    else {
      const h = await sha256Hex(b);
      out.push({ path, ok: h === sha, detail: h === sha ? sha : `listed ${sha}, file hashes to ${h}` });
    }
  }
  for (const p of files.keys()) {
    if (p !== MANIFEST && !listed.has(p)) {
      out.push({ path: p, ok: false, detail: "not listed in the manifest" });
    }
  }
  return out;
}

/** The replay inputs of a bundle, or what is missing. */
export function replayInputsOf(files: BundleFiles): ReplayInputs {
  const json = (path: string) => {
    const t = text(files, path);
    if (t === undefined) throw new Error(`the bundle has no ${path}`);
    try {
      return JSON.parse(t);
    } catch (e) {
      throw new Error(`${path} is not JSON: ${(e as Error).message}`);
    }
  };
  const payloads = new Map<string, string>();
  for (const [p, b] of files) {
    const m = /^payloads\/([0-9a-f]{64})\.json$/.exec(p);
    if (m) payloads.set(m[1]!, dec.decode(b)); // group 1 is not optional
  }
  return {
    run: json("inputs/run.json"),
    plan: json("inputs/plan.json"),
    results: json("inputs/results.json"),
    alerts: json("inputs/alerts.json"),
    labAtStart: json("inputs/lab-at-start.json"),
    labAtEnd: json("inputs/lab-at-end.json"),
    linkedSnapshots: json("inputs/linked-snapshots.json"),
    driftReads: json("inputs/drift-reads.json"),
    payloads,
  };
}
