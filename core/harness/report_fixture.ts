/**
 * A realistic ReportData v1 for tests and screenshots of the report page: a one-hour TLS-inspection
 * run on a two-firewall HA pair, with real hashes (so `verify-report` accepts it) and values that
 * need escaping (`<`, `&`, quotes) in free-text fields.
 *
 * @example
 * ```ts
 * import { reportFixture } from "./report_fixture.ts";
 * const ok = await reportFixture();
 * const invalidated = await reportFixture({ decryptChanged: true });
 * ```
 *
 * @module
 */
import type { Plan } from "../src/plan.ts";
import { jcsSha256, sha256Hex } from "../src/util/hash.ts";
import type { Annex, DecryptAlert, ReportData } from "../src/report/types.ts";

/** Options of {@link reportFixture}. */
export interface ReportFixtureOptions {
  /** Simulate a firewall whose TLS decryption was switched off mid-run (`TLSDecryptModeChanged`). */
  decryptChanged?: boolean;
}

/** The frozen plan of the fixture run. */
export const fixturePlan: Plan = {
  identifier: "ngfw-tls-inspection-sustained",
  displayName: "NGFW TLS inspection — sustained throughput",
  description: "Sustained HTTPS load through an active/passive firewall pair with TLS decryption enabled, " +
    "measuring request latency at the client while the firewalls inspect decrypted traffic.",
  tlsDecrypt: "on",
  sloTargetP99Ms: 25,
  deploymentMode: "ha-active-passive",
  phases: [
    { name: "warm-up", durationS: 300, load: { connectionsPerSecond: 500, throughputGbps: 1 } },
    { name: "ramp", durationS: 600, load: { connectionsPerSecond: 2000, throughputGbps: 4 } },
    { name: "sustained", durationS: 2400, load: { connectionsPerSecond: 4000, throughputGbps: 8 } },
    { name: "spike", durationS: 300, load: { connectionsPerSecond: 8000, throughputGbps: 12 } },
    { name: "cool-down", durationS: 300, load: { connectionsPerSecond: 500, throughputGbps: 1 } },
  ],
  vendors: ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch"],
  deviceRoles: ["ngfw", "switch"],
  parameters: {
    trafficMix: "enterprise-https-h2",
    tlsVersion: "1.3",
    cipherSuite: "TLS_AES_256_GCM_SHA384",
    responseBytes: 16384,
    concurrentUsers: 25000,
    sessionResumption: false,
  },
};

const DEVICES = [
  { id: "dev_01hfw0edge01", hostname: "fw-edge-01", vendor: "vendor-a-ngfw", deviceRole: "ngfw" },
  { id: "dev_01hfw0edge02", hostname: "fw-edge-02", vendor: "vendor-b-ngfw", deviceRole: "ngfw" },
  { id: "dev_01hsw0core01", hostname: "sw-core-01", vendor: "vendor-a-switch", deviceRole: "switch" },
  { id: "dev_01hbmc0rk01a", hostname: "bmc-rack-01a", vendor: "vendor-a-bmc", deviceRole: null },
  { id: "dev_01hbmc0rk01b", hostname: "bmc-rack-01b", vendor: "vendor-a-bmc", deviceRole: null },
];

/** `list[i]`, or an error naming the fixture's missing element (the fixture's lists are fixed). */
function nth<T>(list: readonly T[], i: number): T {
  const v = list[i];
  if (v === undefined) throw new Error(`the fixture has no element ${i} in a list of ${list.length}`);
  return v;
}

const STARTED = Date.parse("2026-11-21T13:00:04.512Z");
const DURATION_S = 3912;
const ALERT_AT = "2026-11-21T13:41:10.020Z";

const RESTRICTIONS = {
  en: "This report is licensed to the holder named above for internal evaluation of the tested " +
    "equipment only. It may not be published, sold or used in marketing material, in whole or in " +
    "part, without the written consent of the laboratory.\n" +
    "Results apply only to the configuration, software versions and load profile recorded in this " +
    "report. They are not a certification and do not predict performance in other environments.\n" +
    "Any copy must be complete and unaltered; the SHA-256 values on the cover identify the original.",
  "pt-BR": "Este relatório é licenciado ao titular indicado acima exclusivamente para avaliação " +
    "interna do equipamento testado. Não pode ser publicado, vendido ou usado em material de " +
    "marketing, no todo ou em parte, sem o consentimento por escrito do laboratório.\n" +
    "Os resultados aplicam-se somente à configuração, às versões de software e ao perfil de carga " +
    "registrados neste relatório. Não constituem certificação e não preveem o desempenho em outros " +
    "ambientes.\n" +
    "Qualquer cópia deve ser integral e inalterada; os valores SHA-256 da capa identificam o original.",
  es: "Este informe se licencia al titular indicado arriba únicamente para la evaluación interna " +
    "del equipo probado. No puede publicarse, venderse ni usarse en material de marketing, total o " +
    "parcialmente, sin el consentimiento por escrito del laboratorio.\n" +
    "Los resultados se aplican solo a la configuración, las versiones de software y el perfil de " +
    "carga registrados en este informe. No constituyen una certificación ni predicen el rendimiento " +
    "en otros entornos.\n" +
    "Toda copia debe ser completa e inalterada; los valores SHA-256 de la portada identifican el original.",
};

const LABELS: Record<string, string[]> = {
  ngfw: ["deploy_status", "decrypt_policy", "ha_status"],
  switch: ["system_info"],
};

async function snapshotList(decryptChanged: boolean) {
  const list = [];
  // Polls every 20 minutes during the run, for the firewalls and the core switch.
  for (let minute = 0; minute <= 60; minute += 20) {
    for (const d of DEVICES.slice(0, 3)) {
      for (const label of LABELS[d.deviceRole ?? ""] ?? []) {
        const collectedAt = new Date(STARTED + (minute * 60 + 7) * 1000).toISOString();
        list.push({
          id: `snp_${String(list.length + 1).padStart(5, "0")}`,
          deviceId: d.id,
          deviceHostname: d.hostname,
          endpointLabel: label,
          payloadSha256: await sha256Hex(`${d.id}/${label}/${collectedAt}`),
          collectedAt,
        });
      }
    }
  }
  if (decryptChanged) {
    list.push({
      id: "snp_00999",
      deviceId: nth(DEVICES, 1).id,
      deviceHostname: nth(DEVICES, 1).hostname,
      endpointLabel: "decrypt_policy",
      payloadSha256: await sha256Hex("decrypt-off"),
      collectedAt: ALERT_AT,
    });
  }
  return list;
}

async function annex(id: string, title: string, body: string): Promise<Annex> {
  return { id, title, mediaType: "application/json", sha256: await sha256Hex(body), body };
}

/** Build the fixture report, hashes included (computed as the service defines them). */
export async function reportFixture(opts: ReportFixtureOptions = {}): Promise<ReportData> {
  const decryptChanged = opts.decryptChanged ?? false;
  const snapshots = await snapshotList(decryptChanged);
  const preflight = {
    planIdentifier: fixturePlan.identifier,
    ranAt: new Date(STARTED - 1500).toISOString(),
    checksRun: 5,
    checksPassed: 5,
    checksFailed: 0,
    checksSkipped: 0,
    pass: true,
    summary: "5/5 checks passed — ready for ngfw-tls-inspection-sustained",
    checks: ["ngfw-deploy-clean", "ngfw-decrypt-state-matches-plan", "ntp-source-configured"].flatMap(
      (checkId) =>
        DEVICES.slice(0, 2).map((d, i) => ({
          checkId,
          deviceHostname: d.hostname,
          vendor: d.vendor,
          pass: true,
          detail: checkId === "ngfw-decrypt-state-matches-plan" ? "decrypt on (plan: on)" : "ok",
          evidence: { snapshotId: nth(snapshots, i).id, payloadSha256: nth(snapshots, i).payloadSha256 },
        })),
    ).slice(0, 5),
  };
  const alerts: DecryptAlert[] = decryptChanged
    ? [{
      name: "TLSDecryptModeChanged",
      at: ALERT_AT,
      deviceId: nth(DEVICES, 1).id,
      deviceHostname: nth(DEVICES, 1).hostname,
      from: "on",
      to: "off",
      snapshotId: "snp_00999",
    }]
    : [];
  const report: Omit<ReportData, "reportSha256"> = {
    version: 1,
    generatedAt: new Date(STARTED + DURATION_S * 1000 + 2210).toISOString(),
    meta: {
      runId: "run-0042",
      executionId: "3f6c2a9e-8b1d-4e7a-9c35-0d2e7b41a6f8",
      planIdentifier: fixturePlan.identifier,
      planDisplayName: fixturePlan.displayName,
      planCatalogVersion: 3,
      planSnapshotSha256: await jcsSha256(fixturePlan),
      durationS: DURATION_S,
      startedAt: new Date(STARTED).toISOString(),
      endedAt: new Date(STARTED + DURATION_S * 1000).toISOString(),
      outcome: "passed",
      notes: 'Firmware 11.2.3 on both firewalls; client pool "lg-02" <rack B> & spare NICs.',
    },
    license: {
      id: "DUTLAB-EVAL-1.0",
      name: "dutlab evaluation licence 1.0",
      holder: "Acme Networks Validation Lab <QA & Perf>",
      restrictions: RESTRICTIONS,
    },
    plan: fixturePlan,
    topology: { deploymentMode: fixturePlan.deploymentMode, ucsCount: 2, devices: DEVICES },
    tlsDecrypt: {
      required: "on",
      activeAtStart: "on",
      activeAtEnd: decryptChanged ? "off" : "on",
      alerts,
      resultsInvalidated: decryptChanged,
    },
    results: {
      source: "latencySamplesMs",
      aggregate: {
        count: 1_482_306,
        min_ms: 3.12,
        max_ms: 61.84,
        mean_ms: 9.87,
        p50_ms: 8.91,
        p95_ms: 16.42,
        p99_ms: 21.7,
      },
    },
    slo: {
      targetP99Ms: 25,
      observedP99Ms: 21.7,
      pass: !decryptChanged,
      errorBudgetBurnedPct: 62.4,
      verdictNote: decryptChanged
        ? `Results invalidated: TLS decryption on fw-edge-02 changed from on to off at ${ALERT_AT} ` +
          "during the run, so latency measured across the change does not reflect the plan."
        : null,
    },
    annexes: [
      await annex("preflight-at-start", "Pre-flight result at run start", JSON.stringify(preflight)),
      await annex("snapshots", "Snapshots linked to the run", JSON.stringify(snapshots, null, 2)),
    ],
  };
  return { ...report, reportSha256: await jcsSha256(report) } as ReportData;
}
