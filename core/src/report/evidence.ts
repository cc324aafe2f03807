/**
 * The evidence bundle of a finished run (docs/reports.md "Evidence bundle", `GET /api/test-runs/{id}/evidence`):
 * one `.tar.gz` holding the report, its envelope(s), the PDF when Chromium is present, every snapshot
 * payload the report cites (named by its SHA-256), the public keys, the standalone verifier, the raw
 * inputs a replay reads, a README.txt and a `SHA256SUMS` manifest of every other file.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import { createTarGzip } from "nanotar";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import type { Plan } from "../plan.ts";
import type { PreflightResult } from "../preflight/engine.ts";
import type { RunResults } from "../api/schemas.ts";
import type { StartState } from "../lab/state.ts";
import { dbDriftSource, driftOf, type DriftSource } from "./results/drift.ts";
import { lastSnapshotsAt } from "../snapshots/series.ts";
import { jsonValue } from "../db/json.ts";
import { NotFoundError } from "../errors.ts";
import { isUuid } from "../util/ids.ts";
import { sha256Hex } from "../util/hash.ts";
import type { ReportSignatures } from "./sign.ts";
import { linkedSnapshots } from "./assemble.ts";
import type { DriftRead, LabReadInput, ReadSnapshot, ReplayInputs } from "./replay.ts";
import { MANIFEST } from "./evidence_read.ts";
import type { PdfCertificates } from "./pdf_certificates.ts";
import type { DecryptAlert, ReportData, StartGate } from "./types.ts";

/** One file of a bundle: its path inside the bundle's folder and its content. */
export interface BundleFile {
  path: string;
  data: Uint8Array | string;
}

/** What the bundle reads from the running service. */
export interface EvidenceServices {
  db: Kysely<Database>;
  registry: Registry;
  /** The runs feature, for a run's decrypt alerts (the run service is one; report names no runs module). */
  runs: { alerts(executionId: string): Promise<DecryptAlert[]> };
  signatures: ReportSignatures;
  /** The PDF signing certificates (docs/reports.md "PDF"): a bundle carries every one the service has used. */
  pdfCertificates: PdfCertificates;
  /** The lab's name (`DUT_LAB_NAME`), for runs started before the lab name was recorded. */
  labName: string;
}

/**
 * The DSSE envelopes a bundle carries, each as a file. One place for all of them: a further attestation of
 * the run (e.g. an in-toto test-result Statement) is added here.
 */
export async function bundleEnvelopes(svc: EvidenceServices, executionId: string): Promise<BundleFile[]> {
  // The report's envelope keeps the name the verifier reads; the test-result attestation stands beside it.
  const [report, ...others] = await svc.signatures.attestations(executionId);
  return [
    { path: "report.dsse.json", data: report!.text },
    ...others.map((a) => ({
      path: a.name.replace(`report-${executionId}.`, ""),
      data: a.text,
    })),
  ];
}

/**
 * The public keys and certificates a bundle carries: the key list as `GET /api/report-keys` answers it
 * (Ed25519 keys and PDF signing certificates), each key as PEM and each certificate as PEM.
 */
export async function bundleKeys(svc: EvidenceServices): Promise<BundleFile[]> {
  const keys = await svc.signatures.keys();
  const certificates = await svc.pdfCertificates.list();
  return [
    { path: "keys/report-keys.json", data: JSON.stringify({ keys, certificates }, null, 2) + "\n" },
    ...keys.map((k) => ({ path: `keys/${k.keyId}.pem`, data: k.publicKeyPem })),
    ...certificates.map((c) => ({ path: `keys/pdf-${c.fingerprintSha256}.crt.pem`, data: c.certificatePem })),
  ];
}

type SnapRow = {
  id: string;
  device_id: string;
  endpoint_label: string;
  payload_sha256: string;
  collected_at: Date;
};

const readSnapshot = (r: SnapRow, basis: ReadSnapshot["basis"]): ReadSnapshot => ({
  deviceId: r.device_id,
  endpointLabel: r.endpoint_label,
  snapshotId: r.id,
  payloadSha256: r.payload_sha256,
  collectedAt: new Date(r.collected_at).toISOString(),
  basis,
});

async function snapshotRows(db: Kysely<Database>, ids: string[]): Promise<SnapRow[]> {
  if (!ids.length) return [];
  return await db.selectFrom("snapshots")
    .select([sql<string>`id::text`.as("id"), "device_id", "endpoint_label", "payload_sha256", "collected_at"])
    .where(sql<boolean>`id = any(${ids.map(Number)}::bigint[])`).orderBy("id").execute() as SnapRow[];
}

/** The snapshots a lab state cites (each firewall's decrypt policy, each device's inventory). */
function stateCites(state: StartState): string[] {
  return [
    ...Object.values(state.decrypt ?? {}).map((d) => d.snapshotId),
    ...Object.values(state.inventory ?? {}).map((i) => i.snapshotId),
  ].filter((x): x is string => typeof x === "string");
}

/** The drift source that records every lookup it answers (the bundle's `inputs/drift-reads.json`). */
function recording(source: DriftSource, reads: DriftRead[]): DriftSource {
  return {
    lastAt: async (deviceId, label, at) => {
      const s = await source.lastAt(deviceId, label, at);
      reads.push({
        deviceId,
        endpointLabel: label,
        at: at.toISOString(),
        snapshot: s ? { id: s.id, payload_sha256: s.payload_sha256 } : null,
      });
      return s;
    },
    payload: (sha) => source.payload(sha),
    prefetch: source.prefetch && ((pairs, moments) => source.prefetch!(pairs, moments)),
  };
}

/**
 * A finished run's replay inputs from the database, with its frozen report. 404 for an unknown or
 * unfinished run.
 */
export async function collectReplayInputs(
  svc: EvidenceServices,
  executionId: string,
): Promise<{ report: ReportData; reportText: string; inputs: ReplayInputs }> {
  const { db, registry } = svc;
  const row = isUuid(executionId)
    ? await db.selectFrom("test_runs").selectAll().select(sql<string>`run_id::text`.as("run_id"))
      .where("execution_id", "=", executionId).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError(`No test run with executionId "${executionId}"`);
  if (!row.report_json || !row.ended_at) {
    throw new NotFoundError(`Run "${executionId}" has not finished; its report does not exist yet`);
  }
  const report = JSON.parse(row.report_json) as ReportData;
  const plan = jsonValue<Plan>(row.plan_json);
  const startState = jsonValue<StartState>(row.start_state_json);
  const preflight = jsonValue<PreflightResult>(row.preflight_json);
  const endAnnex = report.annexes.find((a) => a.id === "lab-at-end");
  const endState: StartState = endAnnex ? JSON.parse(endAnnex.body) : { devices: [], decrypt: {} };

  const startSnaps = await startSnapshots(svc, preflight, startState);
  const device = (d: StartState["devices"][number]) => ({
    id: d.id,
    hostname: d.hostname,
    vendor: d.vendor,
    deviceRole: d.deviceRole ?? null,
  });
  const labAtStart: LabReadInput = {
    at: preflight.ranAt,
    devices: startState.devices.map(device),
    snapshots: startSnaps,
  };
  const labAtEnd: LabReadInput = {
    at: new Date(row.ended_at).toISOString(),
    devices: endState.devices.map(device),
    snapshots: (await snapshotRows(db, stateCites(endState))).map((r) => readSnapshot(r, "cited")),
  };
  const driftReads: DriftRead[] = [];
  await driftOf(
    recording(dbDriftSource(db), driftReads),
    registry,
    startState.devices,
    new Date(row.started_at),
    new Date(row.ended_at),
  );
  const linked = await linkedSnapshots(db, row.execution_id);

  // Every payload any of these cite, once.
  const shas = new Set([
    ...labAtStart.snapshots.map((s) => s.payloadSha256),
    ...labAtEnd.snapshots.map((s) => s.payloadSha256),
    ...driftReads.flatMap((d) => d.snapshot ? [d.snapshot.payload_sha256] : []),
    ...linked.map((s) => s.payloadSha256),
  ]);
  const payloads = await payloadsOf(svc.db, [...shas]);
  return {
    report,
    reportText: row.report_json,
    inputs: {
      run: {
        runId: String(row.run_id),
        executionId: row.execution_id,
        planIdentifier: row.plan_identifier,
        planDisplayName: row.plan_display_name,
        planCatalogVersion: row.plan_catalog_version,
        licenseId: row.license_id,
        notes: row.notes,
        labName: row.lab_name ?? svc.labName,
        customer: row.customer,
        startedAt: new Date(row.started_at).toISOString(),
        endedAt: new Date(row.ended_at).toISOString(),
        outcome: row.outcome ?? "",
        startGate: row.start_gate_json == null ? null : jsonValue<StartGate>(row.start_gate_json),
      },
      plan,
      results: row.results_json === null ? null : jsonValue<RunResults>(row.results_json),
      alerts: await svc.runs.alerts(row.execution_id),
      labAtStart,
      labAtEnd,
      linkedSnapshots: linked,
      driftReads,
      payloads,
    },
  };
}

/**
 * The lab read at start: the snapshots the pre-flight and the lab state cite, and, for a check's alsoReads
 * labels (not cited), the last snapshot of the label collected at or before the pre-flight.
 */
async function startSnapshots(
  svc: EvidenceServices,
  preflight: PreflightResult,
  startState: StartState,
): Promise<ReadSnapshot[]> {
  const { db, registry } = svc;
  const startCited = await snapshotRows(db, [
    ...preflight.checks.flatMap((c) => c.evidence ? [c.evidence.snapshotId] : []),
    ...stateCites(startState),
  ]);
  const startSnaps = new Map<string, ReadSnapshot>();
  for (const r of startCited) startSnaps.set(`${r.endpoint_label}\n${r.device_id}`, readSnapshot(r, "cited"));
  const checks = new Map(registry.checks.map((c) => [c.check.id, c.check]));
  // What the checks also read, not cited: the last snapshot at the pre-flight, all pairs in one statement.
  const wanted = new Map<string, { deviceId: string; label: string }>();
  for (const c of preflight.checks) {
    for (const label of checks.get(c.checkId)?.alsoReads ?? []) {
      const k = `${label}\n${c.deviceId}`;
      if (!startSnaps.has(k)) wanted.set(k, { deviceId: c.deviceId, label });
    }
  }
  const found = await lastSnapshotsAt(db, [...wanted.values()], new Date(preflight.ranAt));
  for (const [k, p] of wanted) {
    const r = found.get(`${p.deviceId}\n${p.label}`);
    if (r) startSnaps.set(k, readSnapshot(r as SnapRow, "inferred"));
  }
  return [...startSnaps.values()];
}

/** The payloads of these hashes (by hash). */
async function payloadsOf(db: EvidenceServices["db"], all: string[]): Promise<Map<string, string>> {
  const payloads = new Map<string, string>();
  for (let i = 0; i < all.length; i += 500) {
    const { rows } = await sql<{ sha256: string; payload: string }>`select sha256, payload
      from snapshot_payloads where sha256 = any(${all.slice(i, i + 500)}::text[])`.execute(db);
    for (const p of rows) payloads.set(p.sha256, p.payload);
  }
  return payloads;
}

const README = (id: string, pdf: string) =>
  `Evidence bundle of dutlab test run ${id}

Files
  report.json           the frozen report (its reportSha256 is printed on the PDF's cover)
  report.dsse.json      its signed DSSE envelope (in-toto Statement v1, Ed25519)
  test-result.dsse.json the in-toto test-result attestation (predicate test-result/v0.1), same key
  report.pdf            ${pdf}
                        (signed, PAdES: check it with pdfsig or a PDF reader; the certificate is in keys/)
  keys/                 the service's public signing keys and PDF signing certificates (report-keys.json as
                        GET /api/report-keys lists them, each key as PEM, each certificate as pdf-<sha256>.crt.pem)
  payloads/<sha256>.json  every snapshot payload the report cites, named by the SHA-256 of its content
  inputs/               what the run recorded: the frozen plan, the submitted results, the alerts, the
                        snapshots each lab read returned, the snapshots linked to the run, the drift reads
  verify_report.ts      the standalone verifier (the service's own derivations bundled in)
  SHA256SUMS            the SHA-256 of every other file

Check it (needs only Node.js and npm; the verifier downloads its npm dependencies once):
  sha256sum -c SHA256SUMS
  npx -y deno@2.9.6 run -A verify_report.ts report.json --envelope report.dsse.json --key keys/report-keys.json
  npx -y deno@2.9.6 run -A verify_report.ts --replay .

--replay (on this folder or on the .tar.gz itself) checks the manifest and the signature, then
recomputes from inputs/ and payloads/ alone every figure the report derived (each pre-flight check result,
the aggregates and error rate, the SLO, the drift, the verdict under the rule the report names, each annex's
hash) with the service's own code, prints each beside the sealed one, and exits 0 when all agree, 1 when
anything differs, 3 when a part cannot be reproduced (said on its line, with why).
`;

/** The bundle's entry saying the PDF is missing and why (issue 49 point 3: never a silent 200 without it). */
export const PDF_MISSING = "report.pdf.MISSING.txt";

/** Options of {@link evidenceBundle}. */
export interface EvidenceBundleOptions {
  /** The standalone verifier's text (tools/verify_report.ts). */
  verifier: string;
  /**
   * The report PDF, or why it cannot be made (null: Chromium missing); called once. A bundle without the
   * PDF says so: README.txt names the reason and `report.pdf.MISSING.txt` (listed in SHA256SUMS) holds it.
   */
  pdf?: () => Promise<Uint8Array | { missing: string } | null>;
}

/**
 * The bundle of a finished run as files (the manifest last), and its folder name `evidence-<first 8 of
 * the execution id>` (paths stay under tar's 100-character name field). 404 for an unknown or unfinished run.
 */
export async function evidenceFiles(
  svc: EvidenceServices,
  executionId: string,
  opts: EvidenceBundleOptions,
): Promise<{ folder: string; files: BundleFile[]; endedAt: string; pdfMissing: string | null }> {
  const { reportText, inputs } = await collectReplayInputs(svc, executionId);
  const made = opts.pdf ? await opts.pdf() : null;
  const pdf = made instanceof Uint8Array ? made : null;
  const missing = made instanceof Uint8Array
    ? null
    : made?.missing ?? "the service could not render it (Chromium missing)";
  const j = (v: unknown) => JSON.stringify(v, null, 2) + "\n";
  const files: BundleFile[] = [
    {
      path: "README.txt",
      data: README(
        executionId,
        pdf
          ? "the report as PDF (report and envelope attached)"
          : `(NOT INCLUDED: ${missing}; see report.pdf.MISSING.txt)`,
      ),
    },
    ...(missing
      ? [{
        path: PDF_MISSING,
        data: `report.pdf is not in this bundle: ${missing}.\n` +
          `Everything else is: report.json and its envelope verify without it (verify_report.ts).\n`,
      }]
      : []),
    { path: "report.json", data: reportText },
    ...await bundleEnvelopes(svc, executionId),
    ...(pdf ? [{ path: "report.pdf", data: pdf }] : []),
    ...await bundleKeys(svc),
    { path: "verify_report.ts", data: opts.verifier },
    { path: "inputs/run.json", data: j(inputs.run) },
    { path: "inputs/plan.json", data: j(inputs.plan) },
    { path: "inputs/results.json", data: j(inputs.results) },
    { path: "inputs/alerts.json", data: j(inputs.alerts) },
    { path: "inputs/lab-at-start.json", data: j(inputs.labAtStart) },
    { path: "inputs/lab-at-end.json", data: j(inputs.labAtEnd) },
    { path: "inputs/linked-snapshots.json", data: j(inputs.linkedSnapshots) },
    { path: "inputs/drift-reads.json", data: j(inputs.driftReads) },
    ...[...inputs.payloads].sort(([a], [b]) => a < b ? -1 : 1).map(([sha, text]) => ({
      path: `payloads/${sha}.json`,
      data: text,
    })),
  ];
  const sums: string[] = [];
  for (const f of files) sums.push(`${await sha256Hex(f.data)}  ${f.path}`);
  files.push({ path: MANIFEST, data: sums.join("\n") + "\n" });
  return {
    folder: `evidence-${executionId.slice(0, 8)}`,
    files,
    endedAt: inputs.run.endedAt,
    pdfMissing: missing,
  };
}

/**
 * The bundle as a `.tar.gz` (ustar, one folder, every file's time the run's end, so the same run gives
 * the same archive while its PDF and keys are unchanged).
 *
 * @example
 * ```ts
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(svc: EvidenceServices, executionId: string, verifier: string) {
 *   const { bytes, filename } = await evidenceBundle(svc, executionId, { verifier });
 *   await Deno.writeFile(filename, bytes); // evidence-1a2b3c4d.tar.gz
 * }
 * ```
 */
export async function evidenceBundle(
  svc: EvidenceServices,
  executionId: string,
  opts: EvidenceBundleOptions,
): Promise<{ bytes: Uint8Array; filename: string; fileCount: number; pdfMissing: string | null }> {
  const { folder, files, endedAt, pdfMissing } = await evidenceFiles(svc, executionId, opts);
  const enc = new TextEncoder();
  const mtime = new Date(endedAt).getTime();
  const bytes = await createTarGzip(
    [
      { name: `${folder}/`, attrs: { mode: "755", mtime } },
      ...files.map((f) => ({
        name: `${folder}/${f.path}`,
        data: typeof f.data === "string" ? enc.encode(f.data) : f.data,
        attrs: { mode: "644", mtime, uid: 0, gid: 0 },
      })),
    ],
    { attrs: { uid: 0, gid: 0 } },
  );
  return { bytes, filename: `${folder}.tar.gz`, fileCount: files.length, pdfMissing };
}
