/**
 * The comparison step of a replay (`replayReport` in `replay.ts`): the sealed report against the replayed one, figure
 * by figure, then the annexes, then whatever else differs, then the whole report.
 *
 * @module
 */
import type { PreflightResult } from "../preflight/engine.ts";
import { canonicalJson } from "../util/hash.ts";
import type { ReportData } from "./types.ts";

/** One compared figure: the sealed value, the replayed one, and the outcome. */
export interface ReplayLine {
  what: string;
  /** `same`; `differs`; `input` (an input does not match what it claims); `not-sealed` (the sealed report
   * predates it); `not-reproducible` (this code cannot recompute it, `detail` says why). */
  status: "same" | "differs" | "input" | "not-sealed" | "not-reproducible";
  sealed?: string;
  replayed?: string;
  detail?: string;
}

export const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const show = (v: unknown): string =>
  v === undefined ? "(absent)" : typeof v === "string" ? v : canonicalJson(v);

/** The leaves of a JSON value by JSON Pointer-like path (`/a/0/b`); an empty object or array is a leaf. */
function leaves(v: unknown, path = "", out = new Map<string, unknown>()): Map<string, unknown> {
  if (Array.isArray(v) && v.length) v.forEach((x, i) => leaves(x, `${path}/${i}`, out));
  else if (isObj(v) && Object.keys(v).length) {
    for (const [k, x] of Object.entries(v)) {
      leaves(x, `${path}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`, out);
    }
  } else out.set(path, v);
  return out;
}

/** Paths whose values differ (`differs`), and paths only the replay has (`added`). */
function leafDiff(sealed: unknown, replayed: unknown): { differs: string[]; added: string[] } {
  const a = leaves(sealed);
  const b = leaves(replayed);
  const differs: string[] = [];
  const added: string[] = [];
  for (const [p, v] of a) {
    if (!b.has(p)) {
      // A sealed leaf the replay has not: differs unless the replay has members below it (an empty
      // container in the sealed one, filled in the replay, differs too).
      differs.push(p);
    } else if (canonicalJson(v) !== canonicalJson(b.get(p))) differs.push(p);
  }
  for (const p of b.keys()) if (!a.has(p)) added.push(p);
  return { differs, added };
}

const at = (v: unknown, path: string): unknown => {
  let cur = v;
  for (const seg of path.split("/").slice(1)) {
    const k = seg.replace(/~1/g, "/").replace(/~0/g, "~");
    cur = Array.isArray(cur) ? cur[Number(k)] : isObj(cur) ? cur[k] : undefined;
  }
  return cur;
};

/** The two reports compared, the lines written so far and the paths a named line already covers. */
interface Pair {
  lines: ReplayLine[];
  sealed: ReportData;
  replayed: ReportData;
  covered: Set<string>;
}

/** One named figure at a JSON path of both reports. */
function figure({ lines, sealed, replayed, covered }: Pair, what: string, path: string): void {
  covered.add(path);
  const s = at(sealed, path);
  const r = at(replayed, path);
  if (s === undefined && r === undefined) return;
  if (s === undefined) {
    lines.push({ what, status: "not-sealed", replayed: show(r), detail: "the sealed report predates it" });
    return;
  }
  lines.push({
    what,
    status: show(s) === show(r) ? "same" : "differs",
    sealed: show(s),
    replayed: show(r),
  });
}

const annexValue = (r: ReportData, id: string): unknown => {
  const a = r.annexes.find((x) => x.id === id);
  try {
    return a ? JSON.parse(a.body) : undefined;
  } catch {
    return undefined;
  }
};

/** The named figures, then the annexes, then whatever else differs, then the whole report. */
export function compare(
  lines: ReplayLine[],
  sealed: ReportData,
  replayed: ReportData,
  inferred: ReadonlyMap<string, string[]>,
): void {
  const p: Pair = { lines, sealed, replayed, covered: new Set<string>() };
  comparePreflight(p, inferred);
  compareFigures(p);
  compareAnnexes(p);
  compareRest(p);
}

/** Each pre-flight check result, matched by check and device. */
function comparePreflight({ lines, sealed, replayed }: Pair, inferred: ReadonlyMap<string, string[]>): void {
  const pfS = annexValue(sealed, "preflight-at-start") as PreflightResult | undefined;
  const pfR = annexValue(replayed, "preflight-at-start") as PreflightResult | undefined;
  const key = (c: { checkId: string; deviceId: string }) => `${c.checkId}@${c.deviceId}`;
  const rByKey = new Map((pfR?.checks ?? []).map((c) => [key(c), c]));
  const sKeys = new Set((pfS?.checks ?? []).map(key));
  for (const c of pfS?.checks ?? []) {
    const r = rByKey.get(key(c));
    const s = `${c.status}: ${c.detail}`;
    const rr = r ? `${r.status}: ${r.detail}` : "(not evaluated)";
    const same = s === rr && canonicalJson(c) === canonicalJson(r);
    const guessed = inferred.get(c.deviceId);
    lines.push({
      what: `pre-flight ${c.checkId} on ${c.deviceHostname}`,
      status: same ? "same" : "differs",
      sealed: s,
      replayed: rr,
      ...(!same && guessed
        ? {
          detail:
            `the bundle inferred this device's ${guessed.join(", ")} snapshot (not cited by the report): ` +
            "see inputs/lab-at-start.json",
        }
        : {}),
    });
  }
  for (const r of pfR?.checks ?? []) {
    if (!sKeys.has(key(r))) {
      lines.push({
        what: `pre-flight ${r.checkId} on ${r.deviceHostname}`,
        status: "differs",
        sealed: "(not in the sealed pre-flight)",
        replayed: `${r.status}: ${r.detail}`,
      });
    }
  }
  if (pfS && pfR) {
    lines.push({
      what: "pre-flight summary",
      status: pfS.summary === pfR.summary && pfS.pass === pfR.pass ? "same" : "differs",
      sealed: pfS.summary,
      replayed: pfR.summary,
    });
  }
}

/** Aggregates, figures, SLO, TLS decryption, drift and the verdict with its reasons. */
function compareFigures(p: Pair): void {
  const { lines, sealed, replayed, covered } = p;
  const fig = (what: string, path: string) => figure(p, what, path);
  for (const k of Object.keys({ ...sealed.results.aggregate, ...replayed.results.aggregate })) {
    fig(`aggregate ${k}`, `/results/aggregate/${k}`);
  }
  const figures = { ...sealed.results.figures, ...replayed.results.figures };
  for (const k of Object.keys(figures)) fig(`figure ${k}`, `/results/figures/${k}/value`);
  fig("error rate (%)", "/results/figures/errorRatePct/value");
  fig("SLO observed p99 (ms)", "/slo/observedP99Ms");
  fig("SLO target p99 (ms)", "/slo/targetP99Ms");
  fig("SLO pass", "/slo/pass");
  fig("SLO error budget burned (%)", "/slo/errorBudgetBurnedPct");
  fig("TLS decryption at start", "/tlsDecrypt/activeAtStart");
  fig("TLS decryption at end", "/tlsDecrypt/activeAtEnd");
  fig("results invalidated", "/tlsDecrypt/resultsInvalidated");
  const driftS = annexValue(sealed, "configuration-drift") as
    | { compared?: number; drift?: unknown[] }
    | undefined;
  const driftR = annexValue(replayed, "configuration-drift") as
    | { compared?: number; drift?: unknown[] }
    | undefined;
  if (driftS || driftR) {
    const d = (x?: { compared?: number; drift?: Array<Record<string, unknown>> }) =>
      x
        ? `${x.compared} compared, ${x.drift?.length ?? 0} drifted` +
          (x.drift?.length
            ? ` (${x.drift.map((e) => `${e.deviceHostname} ${e.endpointLabel}`).join(", ")})`
            : "")
        : undefined;
    const s = d(driftS as never);
    const r = d(driftR as never);
    lines.push(
      s === undefined
        ? {
          what: "configuration drift",
          status: "not-sealed",
          replayed: r,
          detail: "the sealed report predates it",
        }
        : { what: "configuration drift", status: s === r ? "same" : "differs", sealed: s, replayed: r },
    );
  }
  if (sealed.verdict && replayed.verdict) {
    fig(`verdict (rule ${sealed.verdict.rule})`, "/verdict/value");
    const rr = new Map(replayed.verdict.reasons.map((x) => [x.input, x]));
    for (const s of sealed.verdict.reasons) {
      const r = rr.get(s.input);
      const a = `${s.effect}: ${s.detail}`;
      const b = r ? `${r.effect}: ${r.detail}` : "(absent)";
      lines.push({
        what: `verdict reason ${s.input}`,
        status: a === b ? "same" : "differs",
        sealed: a,
        replayed: b,
      });
    }
    for (const r of replayed.verdict.reasons) {
      if (!sealed.verdict.reasons.some((s) => s.input === r.input)) {
        lines.push({
          what: `verdict reason ${r.input}`,
          status: "differs",
          sealed: "(absent)",
          replayed: `${r.effect}: ${r.detail}`,
        });
      }
    }
  }
  covered.add("/verdict");
}

/** Each annex's hash; when it differs, the values inside that differ. */
function compareAnnexes({ lines, sealed, replayed, covered }: Pair): void {
  for (const a of sealed.annexes) {
    const r = replayed.annexes.find((x) => x.id === a.id);
    if (!r) {
      lines.push({
        what: `annex ${a.id} sha256`,
        status: "not-reproducible",
        sealed: a.sha256,
        detail: "this code no longer produces this annex",
      });
      continue;
    }
    if (a.sha256 === r.sha256) {
      lines.push({ what: `annex ${a.id} sha256`, status: "same", sealed: a.sha256, replayed: r.sha256 });
      continue;
    }
    let s: unknown;
    try {
      s = JSON.parse(a.body);
    } catch {
      s = a.body;
    }
    const { differs, added } = leafDiff(s, JSON.parse(r.body));
    if (differs.length) {
      lines.push({
        what: `annex ${a.id} sha256`,
        status: "differs",
        sealed: a.sha256,
        replayed: r.sha256,
        detail: differs.slice(0, 8).map((p) =>
          `${p}: sealed ${show(at(s, p))}, replayed ${show(at(JSON.parse(r.body), p))}`
        )
          .join("; ") + (differs.length > 8 ? `; ${differs.length - 8} more` : ""),
      });
    } else {
      lines.push({
        what: `annex ${a.id} sha256`,
        status: "not-reproducible",
        sealed: a.sha256,
        replayed: r.sha256,
        detail: `every value the sealed annex states was recomputed equal; the replay also has ${
          added.slice(0, 4).join(", ")
        }${added.length > 4 ? ` and ${added.length - 4} more` : ""}, which the sealed report predates`,
      });
    }
  }
  for (const r of replayed.annexes) {
    if (!sealed.annexes.some((a) => a.id === r.id)) {
      lines.push({
        what: `annex ${r.id}`,
        status: "not-sealed",
        replayed: r.sha256,
        detail: "the sealed report predates it",
      });
    }
  }
  covered.add("/annexes");
  covered.add("/reportSha256");
  covered.add("/meta/planSnapshotSha256");
}

/** Anything else the report states (meta, licence, topology, slo note …), then the whole report's hash. */
function compareRest({ lines, sealed, replayed, covered }: Pair): void {
  const prefixed = (prefix: string) => (p: string) => p === prefix || p.startsWith(`${prefix}/`);
  const { differs, added } = leafDiff(sealed, replayed);
  const isCovered = (p: string) => [...covered].some((c) => prefixed(c)(p));
  for (const p of differs.filter((p) => !isCovered(p))) {
    lines.push({
      what: p.slice(1),
      status: "differs",
      sealed: show(at(sealed, p)),
      replayed: show(at(replayed, p)),
    });
  }
  const newer = added.filter((p) => !isCovered(p));
  if (newer.length) {
    lines.push({
      what: "members the sealed report predates",
      status: "not-sealed",
      detail: newer.slice(0, 6).map((p) => p.slice(1)).join(", ") +
        (newer.length > 6 ? ` and ${newer.length - 6} more` : ""),
    });
  }
  const partial = lines.some((l) => l.status === "not-reproducible" || l.status === "not-sealed");
  lines.push({
    what: "reportSha256 (the whole report)",
    status: sealed.reportSha256 === replayed.reportSha256 ? "same" : partial ? "not-reproducible" : "differs",
    sealed: sealed.reportSha256,
    replayed: replayed.reportSha256,
    ...(sealed.reportSha256 !== replayed.reportSha256 && partial
      ? { detail: "the sealed report predates members or rules this code produces (lines above)" }
      : {}),
  });
}
