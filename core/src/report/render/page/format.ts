/**
 * Number, date and duration formatting shared by the report page's sections and the comparison page.
 * Every formatter is fixed to en-US so a report renders the same wherever the service runs.
 *
 * @module
 */

export const num = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });
export const int = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

export const fmtMs = (n: number) => `${num.format(n)} ms`;
export const fmtPct = (n: number) =>
  `${new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 }).format(n)} %`;

/** `2026-11-21 13:00:04 UTC`; an unparsable value is shown as given. */
export function fmtDate(iso: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return new Date(t).toISOString().replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC");
}

export function fmtDuration(totalS: number): string {
  const s = Math.max(0, Math.round(totalS));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const parts = [h > 0 && `${h} h`, m > 0 && `${m} min`, sec > 0 && `${sec} s`].filter(Boolean);
  return parts.length > 0 ? parts.join(" ") : "0 s";
}

export function fmtValue(v: string | number | boolean): string {
  return typeof v === "number" ? num.format(v) : String(v);
}

export function fmtLoad(load: Record<string, number | string>): string {
  const entries = Object.entries(load);
  return entries.length === 0 ? "—" : entries.map(([k, v]) => `${k}: ${fmtValue(v)}`).join(", ");
}
