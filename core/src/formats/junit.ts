import type { ResultSet } from "./result_set.ts";

/**
 * Text as XML 1.0 character data or attribute value: markup characters escaped, characters XML 1.0 cannot
 * hold (C0 controls but tab, LF and CR; lone surrogates; U+FFFE, U+FFFF) replaced by U+FFFD. In attributes,
 * tab, LF and CR are written as character references so that attribute normalisation keeps them.
 */
export function xmlEscape(s: string, attribute = false): string {
  // deno-lint-ignore no-control-regex -- the control characters are exactly what XML 1.0 forbids
  const clean = s.toWellFormed().replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g, "\uFFFD");
  const out = clean.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  return attribute
    ? out.replace(/"/g, "&quot;").replace(/\t/g, "&#9;").replace(/\n/g, "&#10;").replace(/\r/g, "&#13;")
    : out.replace(/\r/g, "&#13;");
}

/** JUnit's timestamp: ISO 8601 date and time in UTC without zone or fraction (`2026-11-25T02:00:00`). */
const junitTime = (iso: string) => new Date(iso).toISOString().slice(0, 19);

/**
 * JUnit XML as Apache Ant writes it (the windyroad JUnit XSD): a `testsuites` root, one `testsuite` per
 * suite (`package` = `dutlab.<kind>.<subject>`, `id` from 0, `hostname` = `dutlab`, `time` 0: results are
 * read, not timed), one `testcase` per case (`classname` = the suite's name); a skipped case holds
 * `<skipped message>`, a fail `<failure type="fail">` and an error `<error type="check-error">`, each with the
 * detail and the evidence line as text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { ResultSet } from "./result_set.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(set: ResultSet) {
 *   assert.match(renderJunit(set), /^<\?xml version="1.0" encoding="UTF-8"\?>/);
 * }
 * ```
 */
export function renderJunit(set: ResultSet): string {
  const a = (s: string) => xmlEscape(s, true);
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"];
  const pkg = `dutlab.${set.kind}.${set.subject}`;
  set.suites.forEach((suite, id) => {
    const count = (s: string) => suite.cases.filter((c) => c.status === s).length;
    lines.push(
      `  <testsuite name="${a(suite.name)}" package="${a(pkg)}" id="${id}" timestamp="${
        junitTime(set.timestamp)
      }" hostname="dutlab" tests="${suite.cases.length}" failures="${count("fail")}" errors="${
        count("error")
      }" skipped="${count("skipped")}" time="0">`,
      "    <properties>",
      ...set.properties.map(([k, v]) => `      <property name="${a(k)}" value="${a(v)}"/>`),
      `      <property name="summary" value="${a(set.summary)}"/>`,
      "    </properties>",
    );
    for (const c of suite.cases) {
      const open = `    <testcase name="${a(c.name)}" classname="${a(suite.name)}" time="0"`;
      const text = xmlEscape([c.detail, ...(c.evidence ? [`evidence: ${c.evidence}`] : [])].join("\n"));
      const message = a(c.detail.split("\n")[0] ?? "");
      if (c.status === "pass") lines.push(`${open}/>`);
      else if (c.status === "skipped") {
        lines.push(`${open}>`, `      <skipped message="${message}"/>`, "    </testcase>");
      } else {
        const el = c.status === "fail" ? "failure" : "error";
        const type = c.status === "fail" ? "fail" : "check-error";
        lines.push(
          `${open}>`,
          `      <${el} message="${message}" type="${type}">${text}</${el}>`,
          "    </testcase>",
        );
      }
    }
    lines.push("    <system-out/>", "    <system-err/>", "  </testsuite>");
  });
  lines.push("</testsuites>", "");
  return lines.join("\n");
}
