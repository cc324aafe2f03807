/**
 * The `configuration-drift` annex as a table for a reader: one row per change (device, label, JSON path,
 * value at start, value at end). The exact annex body, patches included, is in the report's appendix.
 *
 * @module
 */
const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A value as short text: strings as they are, the rest as JSON; long values cut (in full in the appendix). */
function val(v: unknown, present: boolean): string {
  if (!present) return "(none)";
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s.length > 120 ? `${s.slice(0, 117)}…` : s;
}

export function DriftTable({ v }: { v: Record<string, unknown> }) {
  const entries = Array.isArray(v.drift) ? v.drift.filter(isObj) : [];
  const skipped = Array.isArray(v.notCompared) ? v.notCompared.filter(isObj) : [];
  return (
    <div data-annex-table="configuration-drift">
      <p class={entries.length ? "" : "muted"}>
        {entries.length
          ? `${entries.length} of ${v.compared} device label(s) changed between the start and the end of the run ` +
            "(volatile paths such as clocks and counters left out)."
          : `No configuration drift: the ${v.compared} device label(s) compared are the same at the start and ` +
            "the end of the run (volatile paths such as clocks and counters left out)."}
        {skipped.length ? ` Not compared: ${skipped.length} (no snapshot at start or end).` : ""}
      </p>
      {entries.length > 0 && (
        <table class="annex-table">
          <thead>
            <tr>
              <th>Device</th>
              <th>Label</th>
              <th>Path</th>
              <th>At start</th>
              <th>At end</th>
            </tr>
          </thead>
          <tbody>
            {entries.flatMap((e) =>
              (Array.isArray(e.changes) ? e.changes.filter(isObj) : []).map((c) => (
                <tr class="hl-bad">
                  <td>{String(e.deviceHostname ?? "")}</td>
                  <td class="mono">{String(e.endpointLabel ?? "")}</td>
                  <td class="mono">{String(c.path ?? "")}</td>
                  <td class="mono small">{val(c.before, "before" in c)}</td>
                  <td class="mono small">{val(c.after, "after" in c)}</td>
                </tr>
              ))
            )}
          </tbody>
        </table>
      )}
    </div>
  );
}
