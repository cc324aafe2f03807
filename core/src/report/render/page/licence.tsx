/**
 * The licensing sheet, shared by the report page and the comparison page.
 *
 * @module
 */
import type { ReportData } from "../../types.ts";

const LANGS = [
  { key: "en", heading: "English" },
  { key: "pt-BR", heading: "Português (Brasil)" },
  { key: "es", heading: "Español" },
] as const;

/** The licensing sheet: the licence and its restrictions in English, Portuguese and Spanish. */
export function Licence({ report }: { report: Pick<ReportData, "license"> }) {
  const { license } = report;
  return (
    <section class="sheet" data-section="licence">
      <h2>Licensing and use restrictions</h2>
      <p class="muted">
        Licence <strong>{license.id}</strong> — {license.name}. Licensed to {license.holder}
        {license.issuer ? <>; issued by {license.issuer}</> : null}.
      </p>
      {LANGS.map(({ key, heading }) => (
        <div class="lang" lang={key}>
          <h3>{heading}</h3>
          {license.restrictions[key].split(/\n+/).filter((t) => t.trim()).map((t, i) => <p key={i}>{t}</p>)}
        </div>
      ))}
    </section>
  );
}
