/**
 * A report of a large lab (issue 49): the fixture report with `n` devices, most of them unreachable, in
 * its topology and its annexes (lab at start and end, pre-flight at start with one check per device, a
 * snapshot per reachable device), hashes computed as the service defines them. The print-bound test and
 * the benchmark use it; the service's own 5,000-device run is in `bench/scenarios/`.
 *
 * @module
 */
import { jcsSha256, sha256Hex } from "../src/util/hash.ts";
import type { Annex, ReportData } from "../src/report/types.ts";
import { reportFixture } from "./report_fixture.ts";

const VENDORS = [["vendor-a-ngfw", "ngfw"], ["vendor-b-switch", "switch"], ["vendor-a-bmc", "bmc"]] as const;

async function annex(id: string, title: string, body: string): Promise<Annex> {
  return { id, title, mediaType: "application/json", sha256: await sha256Hex(body), body };
}

/** The fixture report with `n` devices; one in `reachableEvery` was reachable (has a snapshot). */
export async function bigReport(n: number, reachableEvery = 50): Promise<ReportData> {
  const base = await reportFixture();
  const devices = Array.from({ length: n }, (_, i) => {
    const [vendor, deviceRole] = VENDORS[i % VENDORS.length]!;
    const hex = i.toString(16).padStart(12, "0");
    return { id: `5f0c2a9e-0000-4000-8000-${hex}`, hostname: `dut-${i}.lab.test`, vendor, deviceRole };
  });
  const reachable = (i: number) => i % reachableEvery === 0;
  const at = base.meta.startedAt;
  const snapshots = await Promise.all(
    devices.filter((_, i) => reachable(i)).map(async (d, k) => ({
      id: `snp_${String(k + 1).padStart(5, "0")}`,
      deviceId: d.id,
      deviceHostname: d.hostname,
      endpointLabel: "system_info",
      payloadSha256: await sha256Hex(`${d.id}/system_info`),
      collectedAt: at,
    })),
  );
  const inventory = Object.fromEntries(devices.map((d, i) => [
    d.id,
    reachable(i)
      ? { status: "read", model: "PA-3220", softwareVersion: "11.2.3", serialNumber: `SN${i}` }
      : { status: "no-snapshot" },
  ]));
  const decrypt = Object.fromEntries(
    devices.filter((d) => d.deviceRole === "ngfw").map((d) => [d.id, { state: "unknown", ruleCount: null }]),
  );
  const checks = devices.map((d, i) =>
    reachable(i)
      ? {
        checkId: "device-reachable",
        deviceId: d.id,
        deviceHostname: d.hostname,
        vendor: d.vendor,
        status: "pass",
        pass: true,
        detail: "ok",
        evidence: { snapshotId: `snp_${i}`, payloadSha256: "0".repeat(64) },
      }
      : {
        checkId: "device-reachable",
        deviceId: d.id,
        deviceHostname: d.hostname,
        vendor: d.vendor,
        status: "skipped",
        pass: false,
        detail: "no snapshot: last poll unreachable",
        evidence: null,
      }
  );
  const failed = checks.filter((c) => c.status !== "pass").length;
  const preflight = {
    planIdentifier: base.plan.identifier,
    ranAt: at,
    checksRun: checks.length,
    checksPassed: checks.length - failed,
    checksFailed: 0,
    checksSkipped: failed,
    pass: false,
    summary: `${checks.length - failed}/${checks.length} checks passed`,
    checks,
  };
  const lab = JSON.stringify({ devices, decrypt, inventory });
  const report: Omit<ReportData, "reportSha256"> = {
    ...base,
    topology: { ...base.topology, devices, inventory } as ReportData["topology"],
    annexes: [
      await annex("preflight-at-start", "Pre-flight result at run start", JSON.stringify(preflight)),
      await annex("lab-at-start", "Lab at run start", lab),
      await annex("snapshots", "Snapshots linked to the run", JSON.stringify(snapshots, null, 2)),
      await annex("lab-at-end", "Lab at run end", lab),
    ],
  };
  delete (report as Partial<ReportData>).reportSha256;
  return { ...report, reportSha256: await jcsSha256(report) } as ReportData;
}
