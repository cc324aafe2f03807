/**
 * verify_report.ts: check a dutlab test-run report without the service or its repository, and replay it.
 *
 * This is the source: `deno task gen:verifier` bundles it, with the core derivations it imports (the report
 * assembly, the pre-flight engine and checks, the adapters' readings, the drift and verdict rules), into
 * one self-contained file, tools/verify_report.ts (pinned `npm:` imports only), which the service serves at
 * `GET /verify-report.ts` and puts in every evidence bundle; `deno task gen:check` fails when it is stale.
 * A relative path is relative to the directory the command was started from (`deno task` runs tools from the
 * project root and passes that directory as INIT_CWD), so `deno task verify-report` works from any directory.
 *
 * ```sh
 * npx -y deno@2.9.6 run -A verify_report.ts report.pdf --key key.pem
 * npx -y deno@2.9.6 run -A verify_report.ts report.json --envelope report.dsse.json --key key.pem
 * npx -y deno@2.9.6 run -A verify_report.ts report.dsse.json --report report.json --key https://lab/api/report-keys
 * npx -y deno@2.9.6 run -A verify_report.ts --replay evidence-1a2b3c4d.tar.gz
 * ```
 *
 * Input (detected from the content): a report JSON, a DSSE envelope (`report.dsse.json`), a PDF from
 * `report.pdf` (which embeds both), or a URL of the service (`…/report.json`, `…/report.pdf` or the print
 * page `/runs/<id>/report`; sends `Authorization: Bearer $ADMIN_TOKEN` when set, fetches the envelope
 * next to report.json).
 *
 * Checks:
 * - every hash of the report: `reportSha256` = SHA-256 of the RFC 8785 canonical JSON of the report
 *   without `reportSha256`; `meta.planSnapshotSha256` = SHA-256 of the canonical `plan`; each annex
 *   `sha256` = SHA-256 of the UTF-8 bytes of its `body`;
 * - the envelope: payloadType `application/vnd.in-toto+json`, an in-toto Statement v1 whose subject
 *   `report-<id>.canonical.json` has digest sha256 = the recomputed `reportSha256` and whose subject
 *   `report-<id>.json` has the SHA-256 of the report file's exact bytes;
 * - the Ed25519 signature over DSSE PAE(payloadType, payload) with `--key`: a public key PEM file
 *   (SubjectPublicKeyInfo), a JWK file, or a key list (`GET /api/report-keys`, file or URL); the key is
 *   picked by the envelope's `keyid`, recomputed from the key (SHA-256 of its DER SubjectPublicKeyInfo);
 * - for a PDF: the embedded report is the one whose `reportSha256` the cover (page 1) prints, and the
 *   PDF metadata names the same hash;
 * - `--expect <sha256>`: `reportSha256` equals a value you trust (e.g. read off a printed cover);
 * - for a report.json URL: the `X-Report-Sha256` header equals the report's `reportSha256`.
 *
 * - `--replay <bundle>` (an evidence bundle `.tar.gz` from `GET /api/test-runs/{id}/evidence`, or its
 *   unpacked folder): its `SHA256SUMS`, the report's hashes and signature (with `--key`, else the bundle's
 *   own `keys/report-keys.json`, said in the output), then the replay: every figure the report derived,
 *   recomputed from `inputs/` and `payloads/` alone with the service's own code, beside the sealed one.
 *
 * Every run says, for each input, what was checked and what was not (`signature: NOT CHECKED (no --key)`).
 * An input that is not a report (a run's JSON, a problem body) gets one line saying what it is.
 * Exit codes: 0 every check passed; 1 a check failed, a replayed figure differs or the input is not a
 * report; 2 usage or I/O error; 3 (replay) nothing differs but a part cannot be reproduced (said why).
 * @module
 */
// The built file is self-contained (a customer saves this one file anywhere): pinned npm: specifiers, no
// import map; the core modules below are bundled in by `deno task gen:verifier`.
// deno-lint-ignore no-import-prefix
import { getDocumentProxy } from "npm:unpdf@1.8.1";
// deno-lint-ignore no-import-prefix
import * as pdfLib from "npm:pdf-lib@1.17.1";
import { buildRegistry } from "../core/verify.ts";
import { describeReplay, replayReport } from "../core/verify.ts";
import type { ReportData } from "../core/verify.ts";
import { verifyReport } from "../core/verify.ts";
import {
  type BundleFiles,
  checkManifest,
  MANIFEST,
  readBundleArchive,
  replayInputsOf,
} from "../core/verify.ts";
import { modules } from "../modules.gen.ts";

const USAGE =
  "Usage: verify_report.ts <report.json|report.dsse.json|report.pdf|url> [--key <key.pem|jwk.json|" +
  "keys.json|keys-url>] [--envelope <report.dsse.json>] [--report <report.json>] [--expect <sha256>]\n" +
  "       verify_report.ts --replay <evidence.tar.gz|folder> [--key <key>] [--expect <sha256>]";
const PAYLOAD_TYPE = "application/vnd.in-toto+json";
const STATEMENT_TYPE = "https://in-toto.io/Statement/v1";
const HEX64 = /^[0-9a-f]{64}$/;
const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });

/** One check: what, whether it passed, the stated and recomputed values or what was found. */
export interface Finding {
  what: string;
  ok: boolean;
  expected?: string;
  actual?: string;
  /** Informational line that neither passes nor fails (e.g. signature not checked). */
  note?: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const hex = (b: ArrayBuffer) =>
  Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
const sha256 = async (data: Uint8Array | string) =>
  hex(
    await crypto.subtle.digest("SHA-256", typeof data === "string" ? enc.encode(data) : data as BufferSource),
  );
// The built-in decoder core/src/util/encoding.ts wraps; not imported from there because this tool must stay
// runnable on its own, outside the repository. Either alphabet is accepted, as signed reports use both.
const unb64 = (s: string) =>
  Uint8Array.fromBase64(s.replace(/-/g, "+").replace(/_/g, "/").replace(/\s+/g, ""));

/** DSSE v1 pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body. */
export function pae(payloadType: string, payload: Uint8Array): Uint8Array<ArrayBuffer> {
  const head = enc.encode(`DSSEv1 ${enc.encode(payloadType).length} ${payloadType} ${payload.length} `);
  const out = new Uint8Array(head.length + payload.length);
  out.set(head);
  out.set(payload, head.length);
  return out;
}

/**
 * Recompute every hash of a parsed report: core's `verifyReport` (the rules the service seals with). The
 * `reportSha256` returned is the stated one when it matches the recomputed hash, else none.
 */
export async function checkReport(report: unknown): Promise<{ findings: Finding[]; reportSha256?: string }> {
  const { findings, reportSha256 } = await verifyReport(report);
  const whole = findings.find((f) => f.what === "reportSha256");
  return { findings, reportSha256: whole?.ok ? reportSha256 : undefined };
}

/**
 * What a JSON value is when it is not a report (one line for the user), or null for a report-shaped value
 * (an object with `reportSha256`, `meta`, `plan` and `annexes`; its hashes are then checked one by one).
 */
export function notAReport(v: unknown): string | null {
  if (
    isObj(v) && typeof v.reportSha256 === "string" && isObj(v.meta) && "plan" in v && Array.isArray(v.annexes)
  ) {
    return null;
  }
  if (isObj(v) && typeof v.type === "string" && typeof v.title === "string" && typeof v.status === "number") {
    return `an error answer (problem+json), not a report: HTTP ${v.status} ${v.title}` +
      (typeof v.detail === "string" ? `: ${v.detail}` : "") +
      (v.status === 401 ? " (is ADMIN_TOKEN the service's token?)" : "");
  }
  if (isObj(v) && typeof v.executionId === "string" && typeof v.status === "string" && !("annexes" in v)) {
    return `a test run's JSON (GET /api/test-runs/${v.executionId}), not its report: the report is at ` +
      `/api/test-runs/${v.executionId}/report.json` +
      (v.status === "finished" ? "" : " once the run has finished");
  }
  if (isObj(v) && "payloadType" in v) return "a DSSE envelope, not a report: pass it with --envelope";
  return `not a report: ${
    isObj(v)
      ? `a JSON object without reportSha256, meta, plan and annexes (members: ${
        Object.keys(v).slice(0, 6).join(", ") || "none"
      })`
      : `JSON ${Array.isArray(v) ? "array" : typeof v}`
  }`;
}

/** A verification key: its id (SHA-256 of the SPKI DER) and the imported key. */
interface Key {
  keyId: string;
  key: CryptoKey;
}

async function importSpki(spki: Uint8Array<ArrayBuffer>): Promise<Key> {
  const key = await crypto.subtle.importKey("spki", spki, { name: "Ed25519" }, true, ["verify"]);
  return { keyId: await sha256(spki), key };
}

async function importJwk(jwk: Record<string, unknown>): Promise<Key> {
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") {
    throw new Error("a JWK must be an Ed25519 public key (kty OKP, crv Ed25519, x)");
  }
  const key = await crypto.subtle.importKey(
    "jwk",
    { kty: "OKP", crv: "Ed25519", x: jwk.x },
    { name: "Ed25519" },
    true,
    [
      "verify",
    ],
  );
  return importSpki(new Uint8Array(await crypto.subtle.exportKey("spki", key)));
}

/** Keys from a PEM public key, a JWK, or a key list (`{keys: [{publicKeyPem | publicKeyJwk}]}`). */
export async function loadKeys(text: string): Promise<Key[]> {
  const pem = /-----BEGIN PUBLIC KEY-----([\s\S]+?)-----END PUBLIC KEY-----/.exec(text)?.[1];
  if (pem !== undefined && !text.trimStart().startsWith("{")) return [await importSpki(unb64(pem))];
  const v = JSON.parse(text);
  if (isObj(v) && Array.isArray(v.keys)) {
    const out: Key[] = [];
    for (const k of v.keys) {
      if (!isObj(k)) continue;
      if (isObj(k.publicKeyJwk)) out.push(await importJwk(k.publicKeyJwk));
      else if (isObj(k) && k.kty === "OKP") out.push(await importJwk(k));
      else if (typeof k.publicKeyPem === "string") out.push(...await loadKeys(k.publicKeyPem));
    }
    return out;
  }
  if (isObj(v)) return [await importJwk(v)];
  throw new Error("not a PEM public key, a JWK or a key list");
}

/** Check a DSSE envelope: its Statement names this report, and (with keys) its signature verifies. */
export async function checkEnvelope(
  envelope: unknown,
  keys: Key[] | null,
  report?: { bytes: Uint8Array; reportSha256?: string; stated?: string },
): Promise<{ findings: Finding[]; signedBy?: string; statementSha256?: string }> {
  const findings: Finding[] = [];
  if (
    !isObj(envelope) || typeof envelope.payload !== "string" || typeof envelope.payloadType !== "string" ||
    !Array.isArray(envelope.signatures)
  ) {
    return {
      findings: [{
        what: "envelope",
        ok: false,
        actual: "not a DSSE envelope {payload, payloadType, signatures}",
      }],
    };
  }
  findings.push({
    what: "envelope payloadType",
    ok: envelope.payloadType === PAYLOAD_TYPE,
    expected: PAYLOAD_TYPE,
    actual: envelope.payloadType,
  });
  let payload: Uint8Array;
  let statement: Record<string, unknown>;
  try {
    payload = unb64(envelope.payload);
    const parsed = JSON.parse(dec.decode(payload));
    if (!isObj(parsed)) throw new Error("the Statement is not an object");
    statement = parsed;
  } catch (e) {
    findings.push({ what: "envelope payload", ok: false, actual: (e as Error).message });
    return { findings };
  }
  findings.push({
    what: "statement _type",
    ok: statement._type === STATEMENT_TYPE,
    expected: STATEMENT_TYPE,
    actual: String(statement._type),
  });
  const subjects = Array.isArray(statement.subject) ? statement.subject.filter(isObj) : [];
  const digestOf = (suffix: string) => {
    const s = subjects.find((x) => typeof x.name === "string" && x.name.endsWith(suffix));
    return s && isObj(s.digest) && typeof s.digest.sha256 === "string" ? s.digest.sha256 : undefined;
  };
  const canonicalDigest = digestOf(".canonical.json");
  const fileSubject = subjects.find((s) =>
    typeof s.name === "string" && s.name.endsWith(".json") && !s.name.endsWith(".canonical.json")
  );
  const fileSha = fileSubject && isObj(fileSubject.digest) && typeof fileSubject.digest.sha256 === "string"
    ? fileSubject.digest.sha256
    : undefined;
  if (!canonicalDigest) {
    findings.push({ what: "statement subject", ok: false, actual: "no *.canonical.json subject" });
  }
  if (report) {
    if (canonicalDigest) {
      findings.push({
        what: "signed reportSha256 (subject digest)",
        ok: canonicalDigest === report.reportSha256 && canonicalDigest === report.stated,
        expected: canonicalDigest,
        actual: report.reportSha256 ?? `(report does not match its stated ${report.stated})`,
      });
    }
    const bytesSha = await sha256(report.bytes);
    findings.push({
      what: "signed report.json bytes (subject digest)",
      ok: fileSha === bytesSha,
      expected: fileSha ?? "(no report-<id>.json subject)",
      actual: bytesSha,
    });
  }
  const statementSha256 = canonicalDigest;
  if (keys === null) {
    findings.push({ what: "signature", ok: true, note: true, actual: "NOT CHECKED (no --key)" });
    return { findings, statementSha256 };
  }
  const data = pae(envelope.payloadType, payload);
  let signedBy: string | undefined;
  const tried: string[] = [];
  for (const s of envelope.signatures) {
    if (!isObj(s) || typeof s.sig !== "string") continue;
    const candidates = keys.filter((k) => !s.keyid || k.keyId === s.keyid);
    tried.push(String(s.keyid ?? "(no keyid)"));
    for (const k of candidates) {
      let sig: Uint8Array<ArrayBuffer>;
      try {
        sig = unb64(s.sig);
      } catch {
        continue;
      }
      if (await crypto.subtle.verify({ name: "Ed25519" }, k.key, sig, data)) {
        signedBy = k.keyId;
        break;
      }
    }
    if (signedBy) break;
  }
  findings.push({
    what: "Ed25519 signature (DSSE PAE)",
    ok: signedBy !== undefined,
    expected: tried.join(", ") || "(no signature)",
    actual: signedBy ??
      (keys.some((k) => tried.includes(k.keyId))
        ? "does not verify with that key"
        : `no given key has keyid ${tried.join(", ")} (given: ${
          keys.map((k) => k.keyId).join(", ") || "none"
        })`),
  });
  return { findings, signedBy, statementSha256 };
}

/** What a PDF carries: its embedded files, the hash the cover prints and the metadata's. */
export async function readPdf(bytes: Uint8Array): Promise<{
  report?: Uint8Array;
  envelope?: Uint8Array;
  coverSha256?: string;
  metadataSha256?: string;
}> {
  // Embedded files and metadata with pdf-lib's object model; the cover's text with PDF.js (unpdf).
  const doc = await pdfLib.PDFDocument.load(bytes, { updateMetadata: false });
  let report: Uint8Array | undefined;
  let envelope: Uint8Array | undefined;
  const { PDFName, PDFDict, PDFArray } = pdfLib;
  const namesDict = doc.catalog.lookupMaybe(PDFName.of("Names"), PDFDict);
  const tree = namesDict?.lookupMaybe(PDFName.of("EmbeddedFiles"), PDFDict);
  const names = tree?.lookupMaybe(PDFName.of("Names"), PDFArray);
  for (let i = 0; names && i + 1 < names.size(); i += 2) {
    const name = names.lookup(i);
    const spec = names.lookup(i + 1);
    if (!(name instanceof pdfLib.PDFString || name instanceof pdfLib.PDFHexString)) continue;
    if (!(spec instanceof PDFDict)) continue;
    const stream = spec.lookupMaybe(PDFName.of("EF"), PDFDict)?.lookup(PDFName.of("F"));
    if (!(stream instanceof pdfLib.PDFRawStream)) continue;
    const content = pdfLib.decodePDFRawStream(stream).decode();
    const filename = name.decodeText();
    // The annexes are attached too (`annex-<id>.json`, `.csv`); the report and its envelope are `report-…`.
    if (!filename.startsWith("report-")) continue;
    if (filename.endsWith(".dsse.json")) envelope = content;
    else if (filename.endsWith(".json")) report = content;
  }
  const info = doc.context.lookup(doc.context.trailerInfo.Info);
  const meta = info instanceof PDFDict ? info.lookup(PDFName.of("DutlabReportSha256")) : undefined;
  const metadataSha256 = meta instanceof pdfLib.PDFString || meta instanceof pdfLib.PDFHexString
    ? meta.decodeText()
    : undefined;

  const pdf = await getDocumentProxy(new Uint8Array(bytes));
  try {
    const page = await pdf.getPage(1);
    // Text runs split unpredictably: compare with white space removed. The cover labels the hash
    // "Report SHA-256" and prints it right after the label.
    const text = (await page.getTextContent()).items.map((i) => ("str" in i ? i.str : "")).join("")
      .replace(/\s+/g, "");
    const coverSha256 = /reportsha-?256([0-9a-f]{64})/i.exec(text)?.[1];
    return { report, envelope, coverSha256, metadataSha256 };
  } finally {
    await pdf.loadingTask.destroy();
  }
}

/** The report.json URL for a print-page URL (`/runs/<id>/report`); other URLs unchanged. */
export function reportJsonUrl(url: string): URL {
  const u = new URL(url);
  const m = /^(.*)\/runs\/([^/]+)\/report\/?$/.exec(u.pathname);
  if (m) {
    u.pathname = `${m[1]}/api/test-runs/${m[2]}/report.json`;
    u.search = "";
  }
  return u;
}

async function fetchBytes(
  url: URL | string,
  withToken: boolean,
): Promise<{ bytes: Uint8Array; res: Response }> {
  const token = withToken ? Deno.env.get("ADMIN_TOKEN") : undefined;
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  if (!res.ok) {
    const hint = res.status === 401 && !token ? " (set ADMIN_TOKEN)" : "";
    await res.body?.cancel();
    throw new Error(`GET ${url} answered HTTP ${res.status}${hint}`);
  }
  return { bytes: new Uint8Array(await res.arrayBuffer()), res };
}

/**
 * A local path as the user meant it: relative to the working directory, or, when it is not there, to where
 * `deno task` was started (INIT_CWD; a nested task keeps the outermost one).
 */
const localPath = (p: string) => {
  const base = Deno.env.get("INIT_CWD");
  if (!base || p.startsWith("/")) return p;
  try {
    Deno.statSync(p); // relative to the working directory when it is there (a direct `deno run`)
    return p;
  } catch {
    return `${base}/${p}`; // else relative to where `deno task` was started
  }
};
const isUrl = (s: string) => /^https?:\/\//i.test(s);
async function readInput(target: string): Promise<Uint8Array> {
  if (target === "-") return new Uint8Array(await new Response(Deno.stdin.readable).arrayBuffer());
  if (isUrl(target)) return (await fetchBytes(target, true)).bytes;
  return await Deno.readFile(localPath(target));
}

/** Findings as printable lines. */
export function describe(findings: Finding[]): string[] {
  return findings.map((f) => {
    if (f.note) return `  --        ${f.what}: ${f.actual}`;
    if (f.ok) return `  ok        ${f.what} ${f.expected ?? f.actual ?? ""}`.trimEnd();
    if (f.expected === undefined) return `  MISMATCH  ${f.what}: ${f.actual}`;
    return `  MISMATCH  ${f.what}: stated ${f.expected}, recomputed ${f.actual}`;
  });
}

type Kind = "pdf" | "envelope" | "report" | "unknown";
function kindOf(bytes: Uint8Array): { kind: Kind; json?: unknown } {
  if (dec.decode(bytes.subarray(0, 5).slice()) === "%PDF-") return { kind: "pdf" };
  try {
    const json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    if (isObj(json) && "payloadType" in json && "signatures" in json) return { kind: "envelope", json };
    return { kind: "report", json };
  } catch {
    return { kind: "unknown" };
  }
}

/** Run the verifier; returns the exit code. Writes to the console. */
export async function main(args: string[]): Promise<number> {
  const opt: Record<string, string | undefined> = {};
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!; // in range: the loop condition just checked i < args.length
    const m = /^--(key|envelope|report|expect|replay)(?:=(.*))?$/.exec(a);
    const name = m?.[1]; // group 1 is not optional, so it is set whenever the option matched
    if (name !== undefined) opt[name] = m?.[2] ?? args[++i];
    else if (a === "-h" || a === "--help") {
      console.log(USAGE);
      return 0;
    } else rest.push(a);
  }
  const expect = opt.expect?.toLowerCase();
  if (opt.replay !== undefined) {
    if (
      rest.length || opt.envelope || opt.report || (expect !== undefined && !HEX64.test(expect)) ||
      !opt.replay
    ) {
      console.error(USAGE);
      return 2;
    }
    return await replayMain(opt.replay, opt.key, expect);
  }
  const target = rest[0];
  if (
    rest.length !== 1 || target === undefined || (expect !== undefined && !HEX64.test(expect)) ||
    Object.values(opt).includes("")
  ) {
    console.error(USAGE);
    return 2;
  }
  const findings: Finding[] = [];
  let reportBytes: Uint8Array | undefined;
  let envelopeBytes: Uint8Array | undefined;
  let from = target;
  let pdfInfo: Awaited<ReturnType<typeof readPdf>> | undefined;
  let keys: Key[] | null = null;
  try {
    if (opt.key) keys = await loadKeys(dec.decode(await readInput(opt.key)));
    if (isUrl(target) && !/\.(pdf|dsse\.json)(\?|$)/.test(new URL(target).pathname)) {
      const url = reportJsonUrl(target);
      from = url.href;
      const { bytes, res } = await fetchBytes(url, true);
      reportBytes = bytes;
      const header = res.headers.get("x-report-sha256");
      const keyHeader = res.headers.get("x-report-signature-key");
      if (keyHeader !== null) {
        envelopeBytes =
          (await fetchBytes(url.href.replace(/report\.json(\?.*)?$/, "report.dsse.json"), true)).bytes;
      }
      if (header !== null) {
        const stated = (kindOf(bytes).json as Record<string, unknown> | undefined)?.reportSha256;
        findings.push({
          what: "X-Report-Sha256 header",
          ok: header === stated,
          expected: header,
          actual: String(stated),
        });
      }
    } else {
      const bytes = await readInput(target);
      const { kind } = kindOf(bytes);
      if (kind === "pdf") {
        try {
          pdfInfo = await readPdf(bytes);
        } catch (e) {
          findings.push({ what: "PDF", ok: false, actual: `cannot read the PDF: ${(e as Error).message}` });
          pdfInfo = {};
        }
        reportBytes = pdfInfo.report;
        envelopeBytes = pdfInfo.envelope;
        if (!reportBytes) {
          findings.push({ what: "PDF embedded report", ok: false, actual: "no report-<id>.json attached" });
        }
        if (!envelopeBytes) {
          findings.push({
            what: "PDF embedded envelope",
            ok: false,
            actual: "no report-<id>.dsse.json attached",
          });
        }
      } else if (kind === "envelope") envelopeBytes = bytes;
      else reportBytes = bytes;
    }
    if (opt.report) reportBytes = await readInput(opt.report);
    if (opt.envelope) envelopeBytes = await readInput(opt.envelope);
  } catch (e) {
    console.error(`Cannot read input: ${(e as Error).message}`);
    return 2;
  }

  let reportSha256: string | undefined;
  let stated: string | undefined;
  if (reportBytes) {
    const { kind, json } = kindOf(reportBytes);
    const what = kind === "report" ? notAReport(json) : null;
    if (what !== null && !envelopeBytes && !pdfInfo) {
      // Not a report and nothing else to check: one line, not a MISMATCH per missing member.
      console.log(from);
      console.log(`  NOT A REPORT  ${what}`);
      console.log("FAILED: the input is not a report; nothing was checked");
      return 1;
    }
    if (kind !== "report") {
      findings.push({ what: "JSON", ok: false, actual: "the report is not UTF-8 JSON" });
    } else if (what !== null) {
      findings.push({ what: "report", ok: false, actual: what });
    } else {
      const r = await checkReport(json);
      findings.push(...r.findings);
      reportSha256 = r.reportSha256;
      stated = isObj(json) && typeof json.reportSha256 === "string" ? json.reportSha256 : undefined;
    }
  } else if (!pdfInfo) {
    findings.push({
      what: "report",
      ok: true,
      note: true,
      actual: "none given: only the envelope is checked",
    });
  }
  let signedBy: string | undefined;
  let statementSha: string | undefined;
  if (envelopeBytes) {
    const { kind, json } = kindOf(envelopeBytes);
    const e = await checkEnvelope(
      kind === "envelope" ? json : null,
      keys,
      reportBytes ? { bytes: reportBytes, reportSha256, stated } : undefined,
    );
    findings.push(...e.findings);
    signedBy = e.signedBy;
    statementSha = e.statementSha256;
  } else if (keys) {
    findings.push({
      what: "signature",
      ok: false,
      actual: "--key given but no envelope (--envelope or a PDF)",
    });
  } else {
    findings.push({
      what: "signature",
      ok: true,
      note: true,
      actual: "NOT CHECKED (no --key, no envelope: add --envelope report.dsse.json --key <key>)",
    });
  }
  if (pdfInfo) {
    findings.push({
      what: "PDF cover reportSha256 = embedded report",
      ok: pdfInfo.coverSha256 !== undefined && pdfInfo.coverSha256 === stated && stated === reportSha256,
      expected: pdfInfo.coverSha256 ?? "(no Report SHA-256 on page 1)",
      actual: reportSha256 ?? stated ?? "(none)",
    });
    findings.push({
      what: "PDF metadata DutlabReportSha256",
      ok: pdfInfo.metadataSha256 === pdfInfo.coverSha256,
      expected: pdfInfo.metadataSha256 ?? "(missing)",
      actual: pdfInfo.coverSha256 ?? "(none)",
    });
  }
  const final = reportSha256 ?? stated ?? statementSha;
  if (expect !== undefined) {
    findings.push({ what: "--expect", ok: expect === final, expected: expect, actual: final ?? "(none)" });
  }
  const ok = findings.every((f) => f.ok);
  console.log(from);
  for (const line of describe(findings)) console.log(line);
  if (ok) {
    // Signed: "signed by <keyid>"; else the signature named as not checked, and why.
    const how = signedBy
      ? ` signed by ${signedBy}`
      : ` (signature NOT CHECKED: ${envelopeBytes ? "no --key" : "no --key, no envelope"})`;
    console.log(`OK reportSha256 ${final}${how}`);
    return 0;
  }
  console.log(`FAILED: ${findings.filter((f) => !f.ok).length} finding(s) differ`);
  return 1;
}

/** The files of a bundle: a `.tar.gz` (detected by its gzip magic) or an unpacked folder. */
async function readBundle(path: string): Promise<BundleFiles> {
  const p = localPath(path);
  if ((await Deno.stat(p)).isDirectory) {
    const files: BundleFiles = new Map();
    const walk = async (dir: string, prefix: string) => {
      for await (const e of Deno.readDir(dir)) {
        if (e.isDirectory) await walk(`${dir}/${e.name}`, `${prefix}${e.name}/`);
        else if (e.isFile) files.set(`${prefix}${e.name}`, await Deno.readFile(`${dir}/${e.name}`));
      }
    };
    await walk(p, "");
    // An unpacked archive's top folder: look inside it.
    if (!files.has(MANIFEST) && !files.has("report.json")) {
      const tops = new Set([...files.keys()].map((k) => k.split("/")[0]));
      if (tops.size === 1) {
        return new Map([...files].map(([k, v]) => [k.replace(/^[^/]+\//, ""), v]));
      }
    }
    return files;
  }
  const bytes = await Deno.readFile(p);
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) {
    throw new Error(`${path} is neither a folder nor a .tar.gz (no gzip header)`);
  }
  return await readBundleArchive(bytes);
}

/** `--replay`: check an evidence bundle (manifest, hashes, signature), then replay its report. */
async function replayMain(
  bundle: string,
  keyArg: string | undefined,
  expect: string | undefined,
): Promise<number> {
  let files: BundleFiles;
  let keys: Key[] | null = null;
  let keyNote: string;
  try {
    files = await readBundle(bundle);
    if (keyArg) {
      keys = await loadKeys(dec.decode(await readInput(keyArg)));
      keyNote = `with --key ${keyArg}`;
    } else if (files.has("keys/report-keys.json")) {
      keys = await loadKeys(dec.decode(files.get("keys/report-keys.json")!));
      keyNote = "with the bundle's own keys/report-keys.json: compare the key id with the lab's " +
        "GET /api/report-keys, or give --key";
    } else keyNote = "NOT CHECKED (no --key and no keys/report-keys.json in the bundle)";
  } catch (e) {
    console.error(`Cannot read the bundle: ${(e as Error).message}`);
    return 2;
  }
  console.log(bundle);
  let failed = 0;
  const manifest = await checkManifest(files);
  const badFiles = manifest.filter((m) => !m.ok);
  if (badFiles.length) {
    for (const m of badFiles) console.log(`  MISMATCH  manifest ${m.path}: ${m.detail}`);
    failed += badFiles.length;
  } else console.log(`  ok        manifest ${MANIFEST}: ${manifest.length} files, each SHA-256 as listed`);

  const reportBytes = files.get("report.json");
  const reportJson = reportBytes ? kindOf(reportBytes).json : undefined;
  const what = reportBytes ? notAReport(reportJson) : "the bundle has no report.json";
  if (what !== null) {
    console.log(`  NOT A REPORT  report.json: ${what}`);
    console.log("FAILED: the bundle holds no report; nothing was replayed");
    return 1;
  }
  const findings: Finding[] = [];
  const r = await checkReport(reportJson);
  findings.push(...r.findings);
  const envelope = files.get("report.dsse.json");
  if (envelope) {
    const e = await checkEnvelope(kindOf(envelope).json, keys, {
      bytes: reportBytes!,
      reportSha256: r.reportSha256,
      stated: (reportJson as { reportSha256: string }).reportSha256,
    });
    findings.push(...e.findings);
    if (keys) findings.push({ what: "signature keys", ok: true, note: true, actual: keyNote });
  } else {findings.push({
      what: "signature",
      ok: true,
      note: true,
      actual: "NOT CHECKED (no report.dsse.json)",
    });}
  if (expect !== undefined) {
    findings.push({
      what: "--expect",
      ok: expect === r.reportSha256,
      expected: expect,
      actual: r.reportSha256,
    });
  }
  const pdfBytes = files.get("report.pdf");
  if (!pdfBytes) {
    findings.push({ what: "report.pdf", ok: true, note: true, actual: "not in the bundle (not checked)" });
  } else {
    // The PDF carries this very report: its attachment is report.json's bytes and its cover prints the hash.
    let pdf: Awaited<ReturnType<typeof readPdf>> = {};
    try {
      pdf = await readPdf(pdfBytes);
    } catch (e) {
      findings.push({
        what: "report.pdf",
        ok: false,
        actual: `cannot read the PDF: ${(e as Error).message}`,
      });
    }
    const attached = pdf.report ? await sha256(pdf.report) : "(no report attached)";
    findings.push({
      what: "report.pdf attached report = report.json",
      ok: attached === await sha256(reportBytes!),
      expected: await sha256(reportBytes!),
      actual: attached,
    });
    findings.push({
      what: "report.pdf cover reportSha256",
      ok: pdf.coverSha256 === r.reportSha256 && r.reportSha256 !== undefined,
      expected: pdf.coverSha256 ?? "(no Report SHA-256 on page 1)",
      actual: r.reportSha256 ?? "(report does not match its hash)",
    });
  }
  for (const l of describe(findings)) console.log(l);
  failed += findings.filter((f) => !f.ok).length;

  console.log("replay (every derived figure recomputed from inputs/ and payloads/, beside the sealed one):");
  let code: number;
  try {
    const registry = buildRegistry(modules);
    const result = await replayReport(registry, reportJson as ReportData, replayInputsOf(files));
    for (const l of describeReplay(result.lines)) console.log(l);
    code = result.exitCode;
    const differs = result.lines.filter((l) => l.status === "differs" || l.status === "input").length;
    const partial = result.lines.filter((l) => l.status === "not-reproducible").length;
    if (failed) {
      console.log(
        `FAILED: ${failed} check(s) of the bundle failed` +
          (differs ? `; ${differs} replayed figure(s) differ` : ""),
      );
    } else if (differs) console.log(`FAILED: ${differs} replayed figure(s) differ from the sealed report`);
    else if (partial) {
      console.log(
        `PARTLY REPRODUCED: ${partial} part(s) cannot be reproduced (said why above); nothing differs`,
      );
    } else console.log(`REPRODUCED reportSha256 ${result.replayedReportSha256} from the bundle's inputs`);
  } catch (e) {
    console.log(`  NOT REPRODUCIBLE  replay: ${(e as Error).message}`);
    console.log("FAILED: the bundle's inputs could not be replayed");
    return 1;
  }
  return failed ? 1 : code;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
