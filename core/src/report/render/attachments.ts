/**
 * The annexes attached to the report PDF as embedded files (issue 49 point 1): the printed report shows
 * counts, every failed and skipped item and aggregates, and the PDF carries the complete per-device detail
 * as files, as PDF/A-3 and e-invoices do. For each annex: `annex-<id>.json`, its exact body (the bytes
 * `annexes[].sha256` in report.json is computed over), and for the tabular annexes `annex-<id>.csv`
 * (RFC 4180, one row per check, device, snapshot or alert). The print page names the same files.
 *
 * @module
 */
import type { Annex } from "../types.ts";

/** One embedded file of the PDF. */
export interface AnnexAttachment {
  name: string;
  mimeType: "application/json" | "text/csv";
  description: string;
  data: string;
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** One CSV field (RFC 4180): quoted when it holds a comma, quote or line break. */
function field(v: unknown): string {
  const s = v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

function csv(head: string[], rows: unknown[][]): string {
  return [head, ...rows].map((r) => r.map(field).join(",")).join("\r\n") + "\r\n";
}

/** The rows of an annex as CSV, or null when the annex is not a table of items. */
export function annexCsv(annex: Annex): string | null {
  let v: unknown;
  try {
    v = JSON.parse(annex.body);
  } catch {
    return null;
  }
  if (annex.id.startsWith("preflight-") && isObj(v) && Array.isArray(v.checks)) {
    return csv(
      ["checkId", "deviceId", "deviceHostname", "status", "pass", "detail", "snapshotId", "payloadSha256"],
      v.checks.filter(isObj).map((c) => {
        const ev = isObj(c.evidence) ? c.evidence : {};
        return [
          c.checkId,
          c.deviceId,
          c.deviceHostname,
          c.status,
          c.pass,
          c.detail,
          ev.snapshotId,
          ev.payloadSha256,
        ];
      }),
    );
  }
  if (annex.id.startsWith("lab-") && isObj(v) && Array.isArray(v.devices)) {
    const decrypt = isObj(v.decrypt) ? v.decrypt : {};
    const inventory = isObj(v.inventory) ? v.inventory : {};
    return csv(
      [
        "id",
        "hostname",
        "vendor",
        "deviceRole",
        "decryptState",
        "decryptRuleCount",
        "inventoryStatus",
        "model",
      ],
      v.devices.filter(isObj).map((d) => {
        const dec = isObj(decrypt[String(d.id)]) ? decrypt[String(d.id)] as Record<string, unknown> : {};
        const inv = isObj(inventory[String(d.id)]) ? inventory[String(d.id)] as Record<string, unknown> : {};
        return [d.id, d.hostname, d.vendor, d.deviceRole, dec.state, dec.ruleCount, inv.status, inv.model];
      }),
    );
  }
  if (annex.id === "snapshots" && Array.isArray(v)) {
    return csv(
      ["snapshotId", "deviceHostname", "endpointLabel", "payloadSha256", "collectedAt"],
      v.filter(isObj).map((
        s,
      ) => [s.snapshotId, s.deviceHostname, s.endpointLabel, s.payloadSha256, s.collectedAt]),
    );
  }
  if (annex.id === "decrypt-alerts" && Array.isArray(v)) {
    return csv(
      ["at", "deviceHostname", "from", "to", "snapshotId"],
      v.filter(isObj).map((a) => [a.at, a.deviceHostname, a.from, a.to, a.snapshotId]),
    );
  }
  return null;
}

/** The embedded files of a report's annexes, in annex order (JSON, then CSV when tabular). */
export function annexAttachments(annexes: Annex[]): AnnexAttachment[] {
  const out: AnnexAttachment[] = [];
  for (const a of annexes) {
    out.push({
      name: `annex-${a.id}.json`,
      mimeType: "application/json",
      description: `Annex ${a.id} (${a.title}), exact body; SHA-256 ${a.sha256} as in report.json`,
      data: a.body,
    });
    const table = annexCsv(a);
    if (table !== null) {
      out.push({
        name: `annex-${a.id}.csv`,
        mimeType: "text/csv",
        description: `Annex ${a.id} (${a.title}) as CSV, one row per item`,
        data: table,
      });
    }
  }
  return out;
}
