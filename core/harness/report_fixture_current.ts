/**
 * A ReportData as the service builds it today (verdict, whole result with provenance, device inventory,
 * lab and customer, every annex), from the same builders the service uses, for page tests and for looking
 * at the printed page. By default it is the run the issue describes: a k6 `handleSummary` export with 434
 * failed requests, a pre-flight that failed 11 of 12 checks at the start, TLS decryption off against a
 * decrypt-on plan, and a 1.5-minute run of a 50-minute plan.
 *
 * @module
 */
import { jsonAnnex, licenseTexts, sealReport } from "../src/report/seal.ts";
import type { DecryptAlert, ReportData } from "../src/report/types.ts";
import type { Plan } from "../src/plan.ts";
import type { PreflightResult } from "../src/preflight/engine.ts";
import type { InventoryEntry, StartState } from "../src/lab/state.ts";
import { aggregateK6, budgetBurnedPct, shareAboveK6 } from "../src/report/results/aggregate.ts";
import { readK6 } from "../src/report/results/k6.ts";
import { k6Figures } from "../src/report/results/figures.ts";
import { computeVerdict, driftForVerdict } from "../src/report/results/verdict.ts";
import type { DriftAnnex } from "../src/report/results/drift.ts";
import { sha256Hex } from "../src/util/hash.ts";

/** Options of {@link currentReportFixture}; every default is the troubled run of the issue. */
export interface CurrentFixtureOptions {
  /** A clean run instead: ready lab, decrypt on, no failures, full length. */
  clean?: boolean;
  /** Add a decrypt-mode change during the run. */
  decryptChanged?: boolean;
}

const PLAN: Plan = {
  identifier: "ngfw-throughput-decrypt-on",
  displayName: "NGFW throughput with TLS decryption",
  description: "HTTPS throughput and latency through the firewall pair with TLS decryption (decrypt and " +
    "re-sign) on all outbound HTTPS, mixed object sizes, 30 minutes at peak.",
  tlsDecrypt: "on",
  sloTargetP99Ms: 250,
  maxErrorRatePct: 1,
  deploymentMode: "inline-routed",
  phases: [
    { name: "warm-up", durationS: 300, load: { throughputGbps: 0.8, connectionsPerSecond: 500 } },
    { name: "ramp", durationS: 600, load: { throughputGbps: 4, connectionsPerSecond: 5000 } },
    { name: "sustained peak", durationS: 1800, load: { throughputGbps: 8, connectionsPerSecond: 20000 } },
    { name: "cool-down", durationS: 300, load: { throughputGbps: 0.8, connectionsPerSecond: 500 } },
  ],
  deviceRoles: ["ngfw", "switch", "bmc"],
  parameters: { trafficMix: "HTTPS 100% (TLS 1.3 70%, TLS 1.2 30%)", loadGenerator: "k6 (summary export)" },
};

const DEVICES = [
  {
    id: "0b9f3c52-41d2-4c1e-9a57-2f0d8e6b1a01",
    hostname: "lab-vendor-a-ngfw",
    vendor: "vendor-a-ngfw",
    deviceRole: "ngfw",
  },
  {
    id: "5e21a7d4-8c3b-4f60-b2e9-71c4d0a9f302",
    hostname: "lab-vendor-b-ngfw",
    vendor: "vendor-b-ngfw",
    deviceRole: "ngfw",
  },
  {
    id: "9c4e0b17-2d6a-4a83-8f15-c3b7e2d41903",
    hostname: "lab-vendor-a-switch",
    vendor: "vendor-a-switch",
    deviceRole: "switch",
  },
  {
    id: "e7a2d9f0-6b14-4c5d-a3e8-0f9b1c62d704",
    hostname: "lab-vendor-a-bmc",
    vendor: "vendor-a-bmc",
    deviceRole: "bmc",
  },
];

/** `list[i]`, or an error naming the fixture's missing element (the fixture's lists are fixed). */
function nth<T>(list: readonly T[], i: number): T {
  const v = list[i];
  if (v === undefined) throw new Error(`the fixture has no element ${i} in a list of ${list.length}`);
  return v;
}

const STARTED = Date.parse("2026-11-23T14:02:11.408Z");

/** Build the report, sealed with real hashes. */
export async function currentReportFixture(opts: CurrentFixtureOptions = {}): Promise<ReportData> {
  const clean = opts.clean ?? false;
  const durationS = clean ? 3012 : 93;
  const ended = new Date(STARTED + durationS * 1000).toISOString();
  const hash = (s: string) => sha256Hex(s);
  const snapshots: Array<{
    snapshotId: string;
    deviceId: string;
    deviceHostname: string;
    endpointLabel: string;
    payloadSha256: string;
    collectedAt: string;
  }> = [];
  let n = 40211;
  for (const [i, d] of DEVICES.entries()) {
    for (
      const label of ["system_info", "ntp_config", d.deviceRole === "ngfw" ? "decrypt_policy" : "interfaces"]
    ) {
      snapshots.push({
        snapshotId: String(n++),
        deviceId: d.id,
        deviceHostname: d.hostname,
        endpointLabel: label,
        payloadSha256: await hash(`${d.id}/${label}`),
        collectedAt: new Date(STARTED + (30 + i) * 1000).toISOString(),
      });
    }
  }
  const decryptOff = !clean;
  const checks = DEVICES.flatMap((d, i) =>
    [
      "ntp-source-configured",
      "snapshot-fresh",
      ...(d.deviceRole === "ngfw" ? ["ngfw-decrypt-state-matches-plan"] : []),
    ]
      .map((checkId) => ({ checkId, d, i }))
  ).slice(0, 12);
  while (checks.length < 12) checks.push({ checkId: "ngfw-ha-state-sane", d: nth(DEVICES, 0), i: 0 });
  const preflight: PreflightResult = {
    planIdentifier: PLAN.identifier,
    ranAt: new Date(STARTED - 900).toISOString(),
    checksRun: 12,
    checksPassed: clean ? 12 : 1,
    checksFailed: clean ? 0 : 10,
    checksSkipped: clean ? 0 : 1,
    pass: clean,
    summary: clean
      ? "12/12 checks passed — ready for ngfw-throughput-decrypt-on"
      : "1/12 checks passed — not ready for ngfw-throughput-decrypt-on: 10 failed, 1 skipped",
    checks: checks.map(({ checkId, d, i }, k) => {
      const pass = clean || k === 0;
      const skipped = !clean && k === 11;
      return {
        checkId,
        description: checkId,
        deviceId: d.id,
        deviceHostname: d.hostname,
        vendor: d.vendor,
        pass,
        status: pass ? "pass" as const : skipped ? "skipped" as const : "fail" as const,
        detail: pass
          ? "ok"
          : skipped
          ? "no snapshot of ha_status yet"
          : checkId === "ngfw-decrypt-state-matches-plan"
          ? "the plan requires decrypt-on but no decrypt rules are configured"
          : checkId === "snapshot-fresh"
          ? "latest system_info snapshot is 3 h 12 min old (limit 60 min)"
          : "no NTP server configured",
        evidence: skipped ? null : {
          snapshotId: nth(snapshots, i * 3).snapshotId,
          payloadSha256: nth(snapshots, i * 3).payloadSha256,
          collectedAt: nth(snapshots, i * 3).collectedAt,
        },
      };
    }),
  };
  const inventory: Record<string, InventoryEntry> = {};
  // Model, software version and serial number of the devices whose inventory was read (the first three).
  const inv: Array<[string, string, string]> = [
    ["FPR-3110", "7.4.2", "JMX2741L0QX"],
    ["FG-400F", "7.4.5", "FG4H0FT923900145"],
    ["N9K-C93180YC-FX", "10.3(5)", "FDO24371KXP"],
  ];
  for (const [i, d] of DEVICES.entries()) {
    const read = inv[i];
    inventory[d.id] = read
      ? {
        status: "read",
        model: read[0],
        softwareVersion: read[1],
        serialNumber: read[2],
        snapshotId: nth(snapshots, i * 3).snapshotId,
        payloadSha256: nth(snapshots, i * 3).payloadSha256,
      }
      : {
        status: "unreadable",
        model: null,
        softwareVersion: null,
        serialNumber: null,
        snapshotId: nth(snapshots, 9).snapshotId,
        payloadSha256: nth(snapshots, 9).payloadSha256,
      };
  }
  const decrypt: StartState["decrypt"] = {
    [nth(DEVICES, 0).id]: {
      state: decryptOff ? "off" : "on",
      snapshotId: nth(snapshots, 2).snapshotId,
      ruleCount: decryptOff ? 0 : 3,
    },
    [nth(DEVICES, 1).id]: {
      state: decryptOff ? "off" : "on",
      snapshotId: nth(snapshots, 5).snapshotId,
      ruleCount: decryptOff ? 0 : 2,
    },
  };
  const start: StartState = { devices: DEVICES, decrypt, inventory };
  const end: StartState = { devices: DEVICES, decrypt };
  const alerts: DecryptAlert[] = opts.decryptChanged
    ? [{
      name: "TLSDecryptModeChanged",
      at: new Date(STARTED + 61_000).toISOString(),
      deviceId: nth(DEVICES, 1).id,
      deviceHostname: nth(DEVICES, 1).hostname,
      from: decryptOff ? "off" : "on",
      to: decryptOff ? "on" : "off",
      snapshotId: "40299",
    }]
    : [];
  const failed = clean ? 3 : 434;
  const total = clean ? 1_204_180 : 12000;
  const seconds = clean ? 3000.2 : 90.0125;
  const summary = {
    state: { testRunDurationMs: seconds * 1000 },
    metrics: {
      http_req_duration: {
        type: "trend",
        contains: "time",
        values: {
          avg: 61.2,
          min: 3.1187,
          med: 48.90235,
          max: 1412.5531,
          "p(90)": 121.2,
          "p(95)": 164.8,
          "p(99)": 231.33,
        },
        thresholds: { "p(95)<500": { ok: true } },
      },
      http_reqs: { type: "counter", contains: "default", values: { count: total, rate: total / seconds } },
      http_req_failed: {
        type: "rate",
        contains: "default",
        values: { rate: failed / total, passes: failed, fails: total - failed },
        thresholds: { "rate<0.01": { ok: failed / total < 0.01 } },
      },
      data_sent: {
        type: "counter",
        contains: "data",
        values: { count: total * 310, rate: total * 310 / seconds },
      },
      data_received: {
        type: "counter",
        contains: "data",
        values: { count: total * 65_600, rate: total * 65_600 / seconds },
      },
      iterations: { type: "counter", contains: "default", values: { count: total, rate: total / seconds } },
      checks: {
        type: "rate",
        contains: "default",
        values: { rate: 1 - failed / total, passes: total - failed, fails: failed },
      },
    },
  };
  const k6 = readK6(summary);
  const aggregate = aggregateK6(k6.duration, k6.requests.count);
  const figures = k6Figures(k6, durationS);
  const activeAtStart = decryptOff ? "off" : "on";
  const activeAtEnd = opts.decryptChanged ? (decryptOff ? "on" : "off") : activeAtStart;
  // Every snapshot is the last one at both ends of the run: each device label is compared and none drifted.
  const drift: DriftAnnex = { compared: snapshots.length, drift: [], notCompared: [] };
  const verdict = computeVerdict({
    outcome: "passed",
    plan: PLAN,
    observedP99Ms: aggregate.p99_ms,
    figures,
    thresholds: k6.thresholds,
    preflight,
    alerts,
    decryptAtStart: activeAtStart,
    decryptAtEnd: activeAtEnd,
    drift: driftForVerdict(drift, DEVICES),
  });
  const invalidated = alerts.length > 0;
  return await sealReport({
    version: 1,
    generatedAt: ended,
    meta: {
      runId: "17",
      executionId: "c1d6f0e2-7a43-4b9e-8d21-5f3a9b0e6c47",
      planIdentifier: PLAN.identifier,
      planDisplayName: PLAN.displayName,
      planCatalogVersion: 5,
      planSnapshotSha256: "",
      durationS,
      startedAt: new Date(STARTED).toISOString(),
      endedAt: ended,
      outcome: "passed",
      notes: 'Client pool "lg-02" <rack B> & spare NICs.',
    },
    license: licenseTexts("ACME-EVAL-1", {
      lab: "Northlake Security Test Lab",
      customer: "ACME Networks GmbH",
    }),
    plan: PLAN,
    topology: { deploymentMode: PLAN.deploymentMode, ucsCount: 1, devices: DEVICES, inventory },
    tlsDecrypt: { required: "on", activeAtStart, activeAtEnd, alerts, resultsInvalidated: invalidated },
    results: {
      source: "k6-summary",
      aggregate,
      latencyProvenance: {
        source: "load-generator",
        exactness: "exact",
        basis: "k6 http_req_duration trend (p50 = med); count = http_reqs",
      },
      k6Format: k6.format,
      figures,
      checks: k6.checks,
      thresholds: k6.thresholds,
    },
    slo: {
      targetP99Ms: PLAN.sloTargetP99Ms,
      observedP99Ms: aggregate.p99_ms,
      pass: aggregate.p99_ms <= PLAN.sloTargetP99Ms && !invalidated,
      errorBudgetBurnedPct: budgetBurnedPct(shareAboveK6(k6.duration, PLAN.sloTargetP99Ms)),
      verdictNote: invalidated ? "Results invalidated: TLS decryption changed during the run" : null,
      errorBudgetExactness: "estimated",
    },
    verdict,
    annexes: [
      await jsonAnnex("preflight-at-start", "Pre-flight result at run start", preflight),
      await jsonAnnex("lab-at-start", "Lab state at run start (devices, firewall TLS decryption)", start),
      await jsonAnnex("snapshots", "Snapshots linked to the run", snapshots),
      await jsonAnnex("decrypt-alerts", "TLSDecryptModeChanged alerts", alerts),
      await jsonAnnex("lab-at-end", "Lab state at run end (firewall TLS decryption)", end),
      await jsonAnnex("results-input", "Results as submitted (digest)", {
        source: "k6-summary",
        k6Format: k6.format,
        k6SummarySha256: await hash(JSON.stringify(summary)),
        metricsUsed: summary.metrics,
        testRunDurationMs: k6.testRunDurationMs,
        errorBudget: "estimated: linear interpolation between the exported trend points",
      }),
      await jsonAnnex(
        "configuration-drift",
        "Configuration drift between run start and end (volatile paths left out)",
        drift,
      ),
    ],
  });
}
