/**
 * Section 2 of the report page, the test plan configuration: parameters, the phase timeline (inline SVG)
 * and the topology with each device's inventory.
 *
 * @module
 */
import { Aggregate, countBy, counts, PRINT_ROWS } from "../annex_summary.tsx";
import type { PlanPhase } from "../../../plan.ts";
import type { ReportData } from "../../types.ts";
import { fmtDuration, fmtLoad, fmtMs, fmtPct, fmtValue } from "./format.ts";
import { Chip, Kv, Row } from "./parts.tsx";

const PHASE_COLOURS = ["#1d4ed8", "#0891b2", "#059669", "#7c3aed", "#db2777", "#ea580c", "#4b5563"];

/** Round axis step so the timeline has at most ~8 ticks. */
function tickStep(total: number): number {
  const steps = [30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400];
  return steps.find((s) => total / s <= 8) ?? Math.ceil(total / 8);
}

function fmtTick(s: number): string {
  if (s === 0) return "0";
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}

function Timeline({ phases, report }: { phases: PlanPhase[]; report: ReportData }) {
  const total = phases.reduce((t, p) => t + Math.max(0, p.durationS), 0);
  if (total <= 0) return <p class="muted">No phase has a duration.</p>;
  const W = 1000;
  const barY = 20;
  const barH = 44;
  const x = (s: number) => (s / total) * W;
  let offset = 0;
  const segs = phases.map((p, i) => {
    const seg = { p, i, start: offset, w: x(Math.max(0, p.durationS)), x0: x(offset) };
    offset += Math.max(0, p.durationS);
    return seg;
  });
  const step = tickStep(total);
  const ticks: number[] = [];
  for (let t = 0; t <= total; t += step) ticks.push(t);
  const started = Date.parse(report.meta.startedAt);
  const markers = report.tlsDecrypt.alerts
    .map((al) => ({ al, s: (Date.parse(al.at) - started) / 1000 }))
    .filter(({ s }) => Number.isFinite(s) && s >= 0 && s <= total);
  return (
    <svg
      class="timeline"
      viewBox={`0 0 ${W} 96`}
      role="img"
      aria-label={`Phase timeline, ${fmtDuration(total)} in total`}
    >
      {segs.map(({ p, i, w, x0 }) => (
        <g>
          <rect
            x={x0}
            y={barY}
            width={Math.max(w - 1.5, 0.5)}
            height={barH}
            rx="3"
            fill={PHASE_COLOURS[i % PHASE_COLOURS.length]}
          />
          {w >= 70 && (
            <>
              <text x={x0 + 6} y={barY + 19} font-size="12" font-weight="700" fill="#fff">
                {p.name.length * 7 > w - 10 ? `${i + 1}` : p.name}
              </text>
              <text x={x0 + 6} y={barY + 36} font-size="11.5" fill="#fff">{fmtDuration(p.durationS)}</text>
            </>
          )}
          {w < 70 && w >= 14 && (
            <text
              x={x0 + w / 2}
              y={barY + 27}
              font-size="12"
              font-weight="700"
              fill="#fff"
              text-anchor="middle"
            >
              {i + 1}
            </text>
          )}
        </g>
      ))}
      <line x1="0" y1={barY + barH + 4} x2={W} y2={barY + barH + 4} stroke="#9ca3af" stroke-width="1" />
      {ticks.map((t) => (
        <g>
          <line
            x1={x(t)}
            y1={barY + barH + 4}
            x2={x(t)}
            y2={barY + barH + 9}
            stroke="#9ca3af"
            stroke-width="1"
          />
          <text
            x={x(t)}
            y={barY + barH + 22}
            font-size="11.5"
            fill="#4b5563"
            text-anchor={t === 0 ? "start" : x(t) > W - 30 ? "end" : "middle"}
          >
            {fmtTick(t)}
          </text>
        </g>
      ))}
      {markers.map(({ al, s }) => (
        <g>
          <line x1={x(s)} y1="4" x2={x(s)} y2={barY + barH + 6} stroke="#b91c1c" stroke-width="3" />
          <text
            x={x(s) > W * 0.65 ? x(s) - 6 : x(s) + 6}
            y="14"
            font-size="11.5"
            font-weight="700"
            fill="#b91c1c"
            text-anchor={x(s) > W * 0.65 ? "end" : "start"}
          >
            decrypt {al.from}→{al.to} ({al.deviceHostname})
          </text>
        </g>
      ))}
    </svg>
  );
}

export function PlanConfig({ report }: { report: ReportData }) {
  const { plan, meta } = report;
  let offset = 0;
  return (
    <section class="sheet" data-section="plan">
      <h2>2. Test plan configuration</h2>
      <p>
        <strong>{plan.displayName}</strong> <span class="muted">({plan.identifier})</span>
      </p>
      {plan.description && <p>{plan.description}</p>}

      <h3>Parameters</h3>
      <Kv>
        <Row label="Plan identifier" field="identifier">
          <span class="mono">{plan.identifier}</span>
        </Row>
        <Row label="Catalog version">{meta.planCatalogVersion}</Row>
        <Row label="TLS decryption" field="tlsDecrypt">
          <Chip state={plan.tlsDecrypt} />
        </Row>
        <Row label="SLO target, p99" field="sloTargetP99Ms">{fmtMs(plan.sloTargetP99Ms)}</Row>
        <Row label="Deployment mode" field="deploymentMode">{plan.deploymentMode}</Row>
        <Row label="Vendors" field="vendors">
          {plan.vendors === undefined ? "any (devices selected by role)" : plan.vendors.join(", ") || "—"}
        </Row>
        <Row label="Device roles" field="deviceRoles">{plan.deviceRoles.join(", ") || "—"}</Row>
        {Object.entries(plan.parameters).map(([k, v]) => (
          <Row key={k} label={<span class="mono">{k}</span>}>{fmtValue(v)}</Row>
        ))}
      </Kv>

      <h3>Phase timeline</h3>
      <Timeline phases={plan.phases} report={report} />
      <table>
        <thead>
          <tr>
            <th class="num">#</th>
            <th>Phase</th>
            <th class="num">Starts at</th>
            <th class="num">Duration</th>
            <th>Offered load</th>
          </tr>
        </thead>
        <tbody>
          {plan.phases.map((p, i) => {
            const start = offset;
            offset += Math.max(0, p.durationS);
            return (
              <tr>
                <td class="num">{i + 1}</td>
                <td>
                  <span class="swatch" style={`background:${PHASE_COLOURS[i % PHASE_COLOURS.length]}`} />
                  {p.name}
                </td>
                <td class="num">{fmtDuration(start)}</td>
                <td class="num">{fmtDuration(p.durationS)}</td>
                <td>{fmtLoad(p.load)}</td>
              </tr>
            );
          })}
          <tr>
            <td />
            <th>Total</th>
            <td />
            <th class="num">{fmtDuration(offset)}</th>
            <td class="muted">
              Run took {fmtDuration(meta.durationS)}
              {report.results.figures?.durationS && offset > 0
                ? `; the load ran ${fmtDuration(report.results.figures.durationS.value)} (${
                  fmtPct(report.results.figures.durationS.value / offset * 100)
                } of the plan)`
                : ""}
            </td>
          </tr>
        </tbody>
      </table>

      <Topology report={report} />
    </section>
  );
}

/** The topology at run start: deployment mode, controllers, and each device with its inventory facts. */
function Topology({ report }: { report: ReportData }) {
  const { topology } = report;
  return (
    <div class="keep">
      <h3>Topology</h3>
      <Kv>
        <Row label="Deployment mode" field="deploymentMode">{topology.deploymentMode}</Row>
        <Row label="Server management controllers" field="ucsCount">{topology.ucsCount}</Row>
        {topology.testbed ? <Row label="Testbed" field="testbed">{topology.testbed}</Row> : null}
      </Kv>
      {topology.devices.length > PRINT_ROWS ? <TopologySummary report={report} /> : (
        <table data-inventory="">
          <thead>
            <tr>
              <th>Hostname</th>
              <th>Vendor</th>
              <th>Role</th>
              <th>Model</th>
              <th>Software</th>
              <th>Serial number</th>
            </tr>
          </thead>
          <tbody>
            {topology.devices.length === 0 && (
              <tr>
                <td colSpan={6} class="muted">No device was registered at run start.</td>
              </tr>
            )}
            {topology.devices.map((d) => {
              const inv = topology.inventory?.[d.id];
              return (
                <tr>
                  <td>
                    {d.hostname}
                    <span class="sub">{d.id}</span>
                  </td>
                  <td class="nw">{d.vendor}</td>
                  <td>{d.deviceRole ?? "—"}</td>
                  {inv?.status === "read"
                    ? (
                      <>
                        <td>{inv.model ?? "—"}</td>
                        <td>{inv.softwareVersion ?? "—"}</td>
                        <td class="mono">{inv.serialNumber ?? "—"}</td>
                      </>
                    )
                    : (
                      <td colSpan={3} class="warn-text">
                        {!topology.inventory
                          ? "not recorded (report frozen before device inventories)"
                          : inv?.status === "no-snapshot"
                          ? "facts not read: no snapshot of the device's inventory label at start"
                          : inv?.status === "unreadable"
                          ? "facts not readable: the adapter could not read the device's snapshot"
                          : "facts not available: the adapter reports no inventory"}
                      </td>
                    )}
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** A topology too large to print one row per device: devices per vendor and role, with their inventory. */
function TopologySummary({ report }: { report: ReportData }) {
  const { topology } = report;
  const groups = new Map<string, ReportData["topology"]["devices"]>();
  for (const d of topology.devices) {
    const k = `${d.vendor}\u0000${d.deviceRole ?? "—"}`;
    groups.set(k, [...(groups.get(k) ?? []), d]);
  }
  const inv = (d: ReportData["topology"]["devices"][number]) => {
    const i = topology.inventory?.[d.id];
    return i?.status === "read"
      ? `${i.model ?? "?"} ${i.softwareVersion ?? "?"}`
      : i?.status ?? "not recorded";
  };
  return (
    <>
      <p>
        {topology.devices.length}{" "}
        device(s) at run start, per vendor and role (model and software, or why not read):
      </p>
      <Aggregate
        head={["Vendor", "Role", "Devices", "Model and software"]}
        rows={[...groups.values()].map((ds) => [
          ds[0]!.vendor,
          ds[0]!.deviceRole ?? "—",
          ds.length,
          counts(countBy(ds, inv)),
        ])}
        attr="topology"
      />
      <p class="muted" data-left-out={topology.devices.length}>
        Each device (hostname, id, inventory) is in report.json (<span class="mono">topology</span>) and in
        this PDF's attached <span class="mono">annex-lab-at-start.json</span> and{" "}
        <span class="mono">annex-lab-at-start.csv</span>.
      </p>
    </>
  );
}
