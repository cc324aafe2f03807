/**
 * The overall verdict as the report shows it: the verdict box of the cover and the note tying the SLO badge
 * to the verdict (cover and executive summary).
 *
 * @module
 */
import type { ReportData, VerdictReason } from "../../types.ts";
import { fmtMs } from "./format.ts";
import { Check, Cross } from "./parts.tsx";

export const VERDICT_KIND: Record<string, string> = {
  pass: "ok",
  fail: "bad",
  invalid: "bad",
  inconclusive: "warn",
  none: "neutral",
};
const VERDICT_MEANING: Record<string, string> = {
  pass: "Every input of the verdict passed.",
  fail: "A measured criterion was missed.",
  invalid: "The results do not measure what the plan asked for.",
  inconclusive: "The evidence is not enough to call this run a pass.",
};
const INPUT_LABEL: Record<string, string> = {
  outcome: "Operator's declared outcome",
  slo: "p99 latency vs SLO target",
  "error-rate": "Error rate",
  "load-generator-thresholds": "Load generator thresholds",
  preflight: "Pre-flight at start",
  "decrypt-alerts": "TLS decryption alerts",
  "decrypt-config": "TLS decryption vs plan",
  coverage: "Coverage of the plan",
  "configuration-drift": "Configuration drift during the run",
};
const effectWord = (e: string) => e === "none" ? "n/a" : e.toUpperCase();

/** The overall verdict, first on the cover: its value, what it means, and every input with its reason. */
export function VerdictBlock({ verdict }: { verdict: NonNullable<ReportData["verdict"]> }) {
  const kind = VERDICT_KIND[verdict.value] ?? "neutral";
  const order = (r: VerdictReason) => ["invalid", "fail", "inconclusive", "pass", "none"].indexOf(r.effect);
  const reasons = [...verdict.reasons].sort((a, b) => order(a) - order(b));
  return (
    <div class={`verdict-box ${kind}`} data-verdict={verdict.value}>
      <div class="verdict-head">
        <span class={`badge big ${kind}`}>
          {verdict.value === "pass" ? <Check /> : <Cross />}
          VERDICT: {verdict.value.toUpperCase()}
        </span>
        <span class="meaning">{VERDICT_MEANING[verdict.value] ?? ""}</span>
      </div>
      <table class="reasons">
        <thead>
          <tr>
            <th>Input</th>
            <th>Result</th>
            <th>Reason</th>
          </tr>
        </thead>
        <tbody>
          {reasons.map((r) => (
            <tr class={r.effect === "pass" || r.effect === "none" ? "" : `hl-${VERDICT_KIND[r.effect]}`}>
              <td>{INPUT_LABEL[r.input] ?? r.input}</td>
              <td>
                <span class={`chip ${VERDICT_KIND[r.effect] ?? "neutral"}`}>{effectWord(r.effect)}</span>
              </td>
              <td>{r.detail}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="rule">
        Rule{" "}
        <span class="mono">{verdict.rule}</span>: the verdict is the most severe result above (invalid, then
        fail, then inconclusive, then pass).
      </p>
    </div>
  );
}

/** The SLO badge's relation to the overall verdict, printed beside the badge wherever it appears. */
export function SloExplained({ report }: { report: ReportData }) {
  const v = report.verdict;
  if (!v) return null;
  const others = v.reasons.filter((r) => r.input !== "slo" && r.effect !== "pass" && r.effect !== "none");
  const sloLine =
    `SLO ${report.slo.pass ? "PASS" : "FAIL"}: p99 ${fmtMs(report.slo.observedP99Ms)} against a target ` +
    `of ${fmtMs(report.slo.targetP99Ms)}${
      report.tlsDecrypt.resultsInvalidated ? ", invalidated by a TLS decryption change" : ""
    }.`;
  return (
    <p class="slo-note" data-slo-note="">
      {sloLine} The SLO is one input of the overall verdict, <strong>{v.value.toUpperCase()}</strong>
      {v.value === "pass"
        ? "."
        : others.length
        ? `, which also follows from: ${
          others.map((r) => `${INPUT_LABEL[r.input] ?? r.input} ${effectWord(r.effect)}`).join(", ")
        }.`
        : "."}
    </p>
  );
}
