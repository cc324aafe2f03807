/**
 * The comparison page's lab differences (compare_page.tsx): per run that started with another lab than the
 * baseline's, the devices added and removed and the inventory changed; past {@link LAB_ROWS_PER_RUN} rows, the
 * run's counts first and the first rows, every one in the comparison's JSON (issue 49).
 *
 * @module
 */
import type { Comparison } from "../results/compare.ts";

/** A value of a difference cell: a dash for none, strings as they are, anything else as JSON. */
export const show = (
  v: unknown,
) => (v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v));

/** Lab-difference rows printed per run; past it, the run's counts first and the first rows (issue 49). */
export const LAB_ROWS_PER_RUN = 20;

/** The runs whose lab at start differs from the baseline's: devices added, removed, inventory changed. */
export function LabDifferences({ cmp }: { cmp: Comparison }) {
  const lab = cmp.runs.filter((r) => r.labDiffers);
  return (
    <>
      {lab.length === 0
        ? (
          <p data-lab-diff="none">
            Every run started with the baseline's devices, models, software versions and serial numbers.
          </p>
        )
        : (
          <table class="cmp" data-table="lab">
            <thead>
              <tr>
                <th>Run</th>
                <th>Device</th>
                <th>Change</th>
                <th>Baseline</th>
                <th>This run</th>
              </tr>
            </thead>
            <tbody>
              {lab.flatMap((r) => {
                const rows = [
                  ...r.lab.devicesAdded.map((d) => (
                    <tr key={`a-${d.id}`}>
                      <td>Run {r.runId}</td>
                      <td>{d.hostname} ({d.vendor})</td>
                      <td>device added</td>
                      <td>—</td>
                      <td>present</td>
                    </tr>
                  )),
                  ...r.lab.devicesRemoved.map((d) => (
                    <tr key={`r-${d.id}`}>
                      <td>Run {r.runId}</td>
                      <td>{d.hostname} ({d.vendor})</td>
                      <td>device removed</td>
                      <td>present</td>
                      <td>—</td>
                    </tr>
                  )),
                  ...r.lab.inventoryChanged.map((c, k) => (
                    <tr key={`c-${k}`}>
                      <td>Run {r.runId}</td>
                      <td>{c.hostname}</td>
                      <td>{c.field === "softwareVersion" ? "software version" : c.field} changed</td>
                      <td>{show(c.baseline)}</td>
                      <td>{show(c.value)}</td>
                    </tr>
                  )),
                ];
                if (rows.length <= LAB_ROWS_PER_RUN) return rows;
                // Issue 49: the counts first, a bounded list, the complete list one step away (the JSON).
                return [
                  <tr key="summary" data-lab-summary={r.runId}>
                    <td>Run {r.runId}</td>
                    <td colSpan={4}>
                      {r.lab.devicesAdded.length} device(s) added, {r.lab.devicesRemoved.length} removed,{" "}
                      {r.lab.inventoryChanged.length} inventory change(s); the first {LAB_ROWS_PER_RUN}{" "}
                      are listed, {rows.length - LAB_ROWS_PER_RUN}{" "}
                      more are left out of print: every one is in GET /api/test-runs/compare (JSON, CSV)
                    </td>
                  </tr>,
                  ...rows.slice(0, LAB_ROWS_PER_RUN),
                ];
              })}
            </tbody>
          </table>
        )}
    </>
  );
}
