/**
 * The cover sheet of the report page: verdict, badges, run facts and the integrity hashes.
 *
 * @module
 */
import type { ReportData } from "../../types.ts";
import { type ReportSignatureInfo, SigningKeyHash } from "../signature_note.tsx";
import { fmtDate, fmtDuration, fmtMs } from "./format.ts";
import { Invalidation, Kv, OutcomeBadge, Row, SloBadge, startGateText, StartOverride } from "./parts.tsx";
import { SloExplained, VerdictBlock } from "./verdict.tsx";

export function Cover({ report, signature }: { report: ReportData; signature?: ReportSignatureInfo }) {
  const { meta, license } = report;
  return (
    <section class="sheet cover" data-section="cover">
      <header>
        <span class="eyebrow">Test-run report{license.issuer ? ` · ${license.issuer}` : ""}</span>
        <span class="muted">Generated {fmtDate(report.generatedAt)} · ReportData v{report.version}</span>
      </header>
      <div class="eyebrow">{meta.planIdentifier}</div>
      <h1>{meta.planDisplayName}</h1>
      <div class="subtitle">
        Run <strong>{meta.runId}</strong> · {fmtDate(meta.startedAt)}
        {license.licensee ? <>{" "}· for {license.licensee}</> : null}
      </div>
      {report.verdict
        ? (
          <>
            <VerdictBlock verdict={report.verdict} />
            <StartOverride report={report} />
            <div class="badges">
              <SloBadge report={report} />
              <span class="badge info">Licence: {license.id}</span>
            </div>
            <SloExplained report={report} />
          </>
        )
        : (
          <>
            <div class="badges">
              <SloBadge report={report} />
              <OutcomeBadge outcome={meta.outcome} />
              <span class="badge info">Licence: {license.id}</span>
            </div>
            <p class="muted" data-legacy="">
              This report was frozen before reports carried an overall verdict: the SLO badge judges p99
              latency only, the outcome is the operator's declaration.
            </p>
            <Invalidation report={report} detailed={false} />
          </>
        )}
      <Kv>
        <Row label="Run · execution id">
          <span class="mono">
            {meta.runId} · {meta.executionId}
          </span>
        </Row>
        <Row label="Plan">
          {meta.planDisplayName}
          <span class="sub">{meta.planIdentifier} · catalog version {meta.planCatalogVersion}</span>
        </Row>
        {license.issuer && <Row label="Test lab">{license.issuer}</Row>}
        {report.startGate && <Row label="Start gate">{startGateText(report)}</Row>}
        <Row label="Customer (licensee)">
          {license.licensee ??
            (license.issuer ? <span class="muted">none named: internal use</span> : license.holder)}
        </Row>
        <Row label="Period">
          {fmtDate(meta.startedAt)} → {fmtDate(meta.endedAt)} ({fmtDuration(meta.durationS)})
        </Row>
        {!report.verdict && (
          <>
            <Row label="Outcome">{meta.outcome}</Row>
            <Row label="SLO (p99)">
              {report.slo.pass ? "pass" : "fail"} · observed {fmtMs(report.slo.observedP99Ms)} vs target{" "}
              {fmtMs(report.slo.targetP99Ms)}
            </Row>
          </>
        )}
        <Row label="Licence">
          {license.id} — {license.name}
        </Row>
        {meta.notes && <Row label="Notes">{meta.notes}</Row>}
      </Kv>
      <div class="hashes" data-integrity="">
        <h2>Integrity</h2>
        <div class="hash" data-hash-block="report">
          <div class="label">Report SHA-256</div>
          <code class="hex" data-hash="report">{report.reportSha256}</code>
        </div>
        <div class="hash" data-hash-block="plan">
          <div class="label">Plan snapshot SHA-256</div>
          <code class="hex" data-hash="plan">{meta.planSnapshotSha256}</code>
        </div>
        <SigningKeyHash signature={signature} />
        <p class="verify">How to verify this report without this service: see the last page.</p>
      </div>
    </section>
  );
}
