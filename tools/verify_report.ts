/**
 * `deno task verify-report <file-or-url> [--expect <sha256>]`: recompute every hash of a ReportData
 * document and print OK or what differs.
 *
 * - A file path (or `-` for stdin) is read as is; a relative path is relative to the directory the command
 *   was started from (`deno task` runs tools from the project root and passes that directory as INIT_CWD),
 *   so it works from any directory: `deno task --config <clone>/deno.json verify-report report.json`.
 * - A URL is fetched with `Authorization: Bearer $ADMIN_TOKEN` when that variable is set. A print-page URL
 *   (`/runs/<executionId>/report`) is read as its JSON twin `/api/test-runs/<executionId>/report.json`.
 *   When the response carries `X-Report-Sha256`, it must equal the report's `reportSha256`.
 * - `--expect <sha256>` also compares `reportSha256` with a value you trust, e.g. the one printed on the
 *   cover of the PDF you hold.
 *
 * Hashes (README "Test runs and reports"): `reportSha256` = SHA-256 of the RFC 8785 canonical JSON of
 * the report without `reportSha256`; `meta.planSnapshotSha256` = SHA-256 of the canonical JSON of `plan`;
 * each annex `sha256` = SHA-256 of the UTF-8 bytes of its `body`.
 *
 * Exit codes: 0 every hash matches; 1 a hash differs or the input is not a report; 2 usage or I/O error.
 * @module
 */
import { resolve } from "node:path";
import { type VerifyOutcome, verifyReportBytes } from "../core/src/report/verify.ts";

const USAGE = "Usage: deno task verify-report <file-or-url> [--expect <sha256>]";

/** The URL to fetch for a report URL: a print-page URL becomes its report.json URL. */
export function reportJsonUrl(url: string): URL {
  const u = new URL(url);
  const m = /^(.*)\/runs\/([^/]+)\/report\/?$/.exec(u.pathname);
  if (m) {
    u.pathname = `${m[1]}/api/test-runs/${m[2]}/report.json`;
    u.search = "";
  }
  return u;
}

/** Read the report bytes and the `X-Report-Sha256` header (URLs only). */
async function load(target: string): Promise<{ bytes: Uint8Array; header: string | null; from: string }> {
  if (/^https?:\/\//i.test(target)) {
    const url = reportJsonUrl(target);
    const token = Deno.env.get("ADMIN_TOKEN");
    const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    if (!res.ok) {
      const hint = res.status === 401 && !token ? " (set ADMIN_TOKEN)" : "";
      await res.body?.cancel();
      throw new Error(`GET ${url} answered HTTP ${res.status}${hint}`);
    }
    return {
      bytes: new Uint8Array(await res.arrayBuffer()),
      header: res.headers.get("x-report-sha256"),
      from: url.href,
    };
  }
  if (target === "-") {
    return {
      bytes: new Uint8Array(await new Response(Deno.stdin.readable).arrayBuffer()),
      header: null,
      from: "stdin",
    };
  }
  return {
    bytes: await Deno.readFile(resolve(Deno.env.get("INIT_CWD") ?? Deno.cwd(), target)),
    header: null,
    from: target,
  };
}

/** Findings as printable lines. */
export function describe(outcome: VerifyOutcome): string[] {
  return outcome.findings.map((f) => {
    if (f.ok) return `  ok        ${f.what} ${f.expected ?? ""}`.trimEnd();
    if (f.expected === undefined) return `  MISMATCH  ${f.what}: ${f.actual}`;
    return `  MISMATCH  ${f.what}: stated ${f.expected}, recomputed ${f.actual}`;
  });
}

async function main(args: string[]): Promise<number> {
  let expect: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--expect") expect = args[++i]?.toLowerCase();
    else if (args[i].startsWith("--expect=")) expect = args[i].slice(9).toLowerCase();
    else if (args[i] === "-h" || args[i] === "--help") {
      console.log(USAGE);
      return 0;
    } else rest.push(args[i]);
  }
  if (rest.length !== 1 || (expect !== undefined && !/^[0-9a-f]{64}$/.test(expect))) {
    console.error(USAGE);
    return 2;
  }
  let loaded;
  try {
    loaded = await load(rest[0]);
  } catch (e) {
    console.error(`Cannot read "${rest[0]}": ${(e as Error).message}`);
    return 2;
  }
  const outcome = await verifyReportBytes(loaded.bytes);
  if (loaded.header !== null) {
    outcome.findings.push({
      what: "X-Report-Sha256 header",
      ok: loaded.header === outcome.reportSha256,
      expected: loaded.header,
      actual: outcome.reportSha256 ?? "(none)",
    });
  }
  if (expect !== undefined) {
    outcome.findings.push({
      what: "--expect",
      ok: expect === outcome.reportSha256,
      expected: expect,
      actual: outcome.reportSha256 ?? "(none)",
    });
  }
  outcome.ok = outcome.findings.every((f) => f.ok);
  console.log(`${loaded.from}`);
  for (const line of describe(outcome)) console.log(line);
  if (outcome.ok) {
    console.log(`OK reportSha256 ${outcome.reportSha256}`);
    return 0;
  }
  console.log(`FAILED: ${outcome.findings.filter((f) => !f.ok).length} finding(s) differ`);
  return 1;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
