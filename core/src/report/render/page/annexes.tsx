/**
 * Section 3 of the report page, the annexes as tables, and the appendix printing each annex body exactly
 * as hashed.
 *
 * @module
 */
import type { ComponentChildren } from "preact";
import type { Annex, ReportData } from "../../types.ts";
import { AnnexTable } from "../annex_tables.tsx";
import { annexAttachments } from "../attachments.ts";
import { int } from "./format.ts";

const annexLetter = (i: number) =>
  i < 26
    ? String.fromCharCode(65 + i)
    : `${String.fromCharCode(65 + Math.floor(i / 26) - 1)}${String.fromCharCode(65 + (i % 26))}`;

function AnnexBlock({ annex, index }: { annex: Annex; index: number }) {
  const bytes = new TextEncoder().encode(annex.body).length;
  const table = AnnexTable({ id: annex.id, body: annex.body });
  return (
    <article class="annex" data-annex={annex.id}>
      <h3>
        Annex {annexLetter(index)} — {annex.title}
      </h3>
      <p class="annex-meta">
        <span class="mono">{annex.id}</span> · {annex.mediaType} · {int.format(bytes)} bytes · SHA-256 of body
        {" "}
        <code class="hex">{annex.sha256}</code>
      </p>
      {table ?? <p class="muted">Shown only in the appendix, exactly as stored.</p>}
    </article>
  );
}

/**
 * Characters of the appendix's monospace text (6.6 pt, 0.6 em advance: Liberation Mono, DejaVu Sans Mono,
 * Menlo) that fit on the first printed line of a body line and on each indented continuation line. The A4
 * text column holds about 123 and 117; the budget leaves a margin for a slightly wider fallback font.
 */
const APPENDIX_FIRST = 114;
const APPENDIX_NEXT = 108;

/**
 * One line of an annex body, with a `<wbr>` only where the printed line has to wrap. The line is laid out
 * with `white-space: pre`, so these are its only break opportunities: the browser would otherwise also
 * break after each hyphen of a UUID or a hostname. They are chosen greedily, as a browser fills lines,
 * among the positions after each `,` and `:` outside strings and after the spaces inside strings, so a
 * line wraps between members and never inside a hash or an id; only a run of text longer than a printed
 * line (no such hash or id exists) is cut at the line's end. A line that fits gets no markup: one break hint
 * per continuation line, rather than one per member, keeps the DOM small (Chromium's print time grows with
 * the number of nodes). The text itself is unchanged (`<wbr>` adds no character).
 */
export function breakable(line: string): ComponentChildren[] {
  if (line.length <= APPENDIX_FIRST) return [line];
  const ops: number[] = []; // positions a printed line may end at
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (ch === '"') {
      let j = i + 1;
      while (j < line.length && line[j] !== '"') {
        if (line[j] === " ") ops.push(j + 1);
        j += line[j] === "\\" ? 2 : 1;
      }
      i = j;
    } else if (ch === "," || ch === ":" || ch === " ") ops.push(i + 1);
  }
  const breaks: number[] = [];
  let start = 0; // where the current printed line starts
  let width = APPENDIX_FIRST;
  let last = -1; // the last opportunity that fits on the current printed line
  let k = 0;
  while (line.length - start > width) {
    const op = ops[k] ?? Infinity; // past the last opportunity: none fits
    if (op - start <= width) {
      last = op;
      k++;
      continue;
    }
    // The next opportunity does not fit: wrap at the last one that did, or cut an overlong run.
    start = last > start
      ? last
      : start + width + (/[\uDC00-\uDFFF]/.test(line.charAt(start + width)) ? 1 : 0);
    breaks.push(start);
    width = APPENDIX_NEXT;
    while ((ops[k] ?? Infinity) <= start) k++;
  }
  const out: ComponentChildren[] = [];
  let from = 0;
  for (const at of breaks) {
    out.push(line.slice(from, at), <wbr />);
    from = at;
  }
  out.push(line.slice(from));
  return out;
}

/**
 * Bodies up to this many bytes are printed in the appendix; a longer one (it grows with the lab: 5,000
 * devices made a body of megabytes, hundreds of printed pages) is named with its size and SHA-256 and is in
 * the PDF's attached `annex-<id>.json`, byte for byte (issue 49).
 */
export const APPENDIX_MAX_BYTES = 16_000;

/** The exact body of each annex: one block per annex, one line per body line, wrapped with a hanging indent. */
export function Appendix({ report }: { report: ReportData }) {
  if (report.annexes.length === 0) return null;
  return (
    <section class="sheet" data-section="appendix">
      <h2>Appendix — annex bodies as hashed</h2>
      <p class="muted">
        Each body below is the exact string its SHA-256 is computed over (UTF-8 bytes); the annex tables above
        are a reading aid over the same data. Long lines continue, indented, on the next printed line.
      </p>
      {report.annexes.map((annex, i) => (
        <article class="exact" data-body-of={annex.id}>
          <h3>
            Annex {annexLetter(i)} body <span class="mono">({annex.id})</span>
          </h3>
          <p class="annex-meta">
            SHA-256 <code class="hex">{annex.sha256}</code>
          </p>
          {new TextEncoder().encode(annex.body).length > APPENDIX_MAX_BYTES
            ? (
              <p class="muted" data-not-printed={annex.id}>
                Not printed: {int.format(new TextEncoder().encode(annex.body).length)}{" "}
                bytes. The exact body is attached to this PDF as{" "}
                <span class="mono">annex-{annex.id}.json</span>{" "}
                (its SHA-256 is the one above) and is in report.json.
              </p>
            )
            : (
              <div class="body">
                {annex.body.split("\n").map((line, n) => <div key={n} class="ln">{breakable(line)}</div>)}
              </div>
            )}
        </article>
      ))}
    </section>
  );
}

export function Annexes({ report }: { report: ReportData }) {
  return (
    <section class="sheet" data-section="annexes">
      <h2>3. Annexes</h2>
      <p class="muted">
        Each annex is shown as a table; its exact body, which the SHA-256 commits to, is printed in the
        appendix and stored in the report JSON.
      </p>
      {report.annexes.length > 0 && (
        <p class="muted" data-attachments>
          The PDF of this report carries every annex in full as attached files (embedded files, listed by a
          PDF reader's attachments panel or <span class="mono">pdfdetach -list</span>):{" "}
          {annexAttachments(report.annexes).map((f, i) => (
            <>
              {i ? ", " : ""}
              <span class="mono">{f.name}</span>
            </>
          ))}.
        </p>
      )}
      {report.annexes.length === 0
        ? <p class="muted">This report has no annex.</p>
        : report.annexes.map((annex, i) => <AnnexBlock key={annex.id} annex={annex} index={i} />)}
    </section>
  );
}
