/**
 * The shape every result format renders (`ResultSet`: suites of cases plus the columns of a table).
 *
 * @module
 */
/** One case: a check on a device, a verdict input, a compared run. */
export interface ResultCase {
  /** Unique within its suite (CI parsers keep only the first of duplicate names). */
  name: string;
  status: "pass" | "fail" | "skipped" | "error";
  /** Why it failed, was skipped or errored (empty for a pass without detail). */
  detail: string;
  /** The evidence it cites, one line (e.g. `snapshot … sha256:…`), or null. */
  evidence: string | null;
  /** The table cells of this case, one per {@link ResultSet.columns}. */
  cells: string[];
}

/** One suite: a device of a pre-flight, a run, a comparison. */
export interface ResultSuite {
  name: string;
  cases: ResultCase[];
}

/** A result as every format renders it. */
export interface ResultSet {
  /** What the result is: `preflight`, `run`, `comparison` (JUnit package prefix `dutlab.<kind>`). */
  kind: "preflight" | "run" | "comparison";
  /** The plan, run or comparison the result is about. */
  subject: string;
  /** ISO 8601 time the result was produced. */
  timestamp: string;
  pass: boolean;
  /** The one summary line. */
  summary: string;
  /** Name-value pairs of the result (JUnit properties). */
  properties: Array<[string, string]>;
  /** Table header. */
  columns: string[];
  suites: ResultSuite[];
}
