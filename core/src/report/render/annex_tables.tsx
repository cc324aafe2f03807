/**
 * Annexes rendered for a reader: each known annex body (JSON) as a table. The exact hashed body is printed
 * in the report's final appendix (see page.tsx); these tables are a reading aid over the same data.
 *
 * @module
 */
import type { ComponentChildren } from "preact";
import { DriftTable } from "./drift_table.tsx";
import { Aggregate, countBy, counts, LeftOut, PRINT_PROBLEMS, PRINT_ROWS } from "./annex_summary.tsx";

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const str = (
  v: unknown,
) => (v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v));

/** `2026-11-21 13:00:04 UTC`; an unparsable value as given. */
function date(v: unknown): string {
  const t = typeof v === "string" ? Date.parse(v) : NaN;
  return Number.isNaN(t) ? str(v) : new Date(t).toISOString().replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC");
}

/**
 * A long hash or id, shortened for the table (`1a2b3c4d5e…9f0e`): the full value stays in the `title`
 * (on screen) and in the appendix (on paper).
 */
export function Short({ value, keep = 10 }: { value: unknown; keep?: number }) {
  const s = str(value);
  if (s.length <= keep + 6) return <span class="mono">{s}</span>;
  return (
    <span class="mono short" title={s} data-full={s}>
      {s.slice(0, keep)}…{s.slice(-4)}
    </span>
  );
}

/**
 * An annex table. `widths` (percent of the text column, one per column) fix the layout: with
 * `table-layout: fixed` Chromium sizes the columns from the first row instead of measuring every cell of
 * a table of a thousand rows, and no cell can push the table past the page's right edge.
 */
function Table(
  { head, widths, children, attr }: {
    head: string[];
    widths: number[];
    children: ComponentChildren;
    attr?: string;
  },
) {
  return (
    <table class="annex-table" data-annex-table={attr ?? ""}>
      <colgroup>{widths.map((w, i) => <col key={i} style={`width:${w}%`} />)}</colgroup>
      <thead>
        <tr>{head.map((h) => <th key={h}>{h}</th>)}</tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}

function Preflight({ v, id }: { v: Record<string, unknown>; id: string }) {
  const checks = Array.isArray(v.checks) ? v.checks.filter(isObj) : [];
  const failing = (c: Record<string, unknown>) => c.pass !== true;
  const bounded = checks.length > PRINT_ROWS;
  const problems = checks.filter(failing);
  const sorted = bounded
    ? problems.slice(0, PRINT_PROBLEMS)
    : [...problems, ...checks.filter((c) => !failing(c))];
  const statusOf = (c: Record<string, unknown>) =>
    typeof c.status === "string" ? c.status : c.pass === true ? "pass" : "fail";
  const perCheck = new Map<string, Record<string, unknown>[]>();
  for (const c of checks) perCheck.set(str(c.checkId), [...(perCheck.get(str(c.checkId)) ?? []), c]);
  return (
    <>
      <p class={v.pass === true ? "" : "bad-text"}>
        <strong>{v.pass === true ? "Ready" : "Not ready"}</strong> at {date(v.ranAt)}: {str(v.summary)}
      </p>
      {bounded && (
        <Aggregate
          head={["Check", "Items", "By status"]}
          rows={[...perCheck].map(([k, cs]) => [
            <span key="check" class="mono">{k}</span>,
            cs.length,
            counts(countBy(cs, statusOf)),
          ])}
          attr="preflight"
        />
      )}
      {bounded && (
        <p>
          {problems.length
            ? `Failed and skipped items (${problems.length}${
              problems.length > PRINT_PROBLEMS ? `, the first ${PRINT_PROBLEMS} printed` : ""
            }):`
            : "No item failed or was skipped."}
        </p>
      )}
      <Table
        head={["Check", "Device", "Status", "Detail", "Evidence snapshot"]}
        widths={[29, 21, 8, 27, 15]}
        attr="preflight"
      >
        {sorted.map((c) => {
          const status = typeof c.status === "string" ? c.status : c.pass === true ? "pass" : "fail";
          const ev = isObj(c.evidence) ? c.evidence : null;
          return (
            <tr class={failing(c) ? "hl-bad" : ""} data-status={status}>
              <td class="mono nw id">{str(c.checkId)}</td>
              <td>{str(c.deviceHostname)}</td>
              <td>
                <span class={`chip ${status === "pass" ? "ok" : status === "skipped" ? "warn" : "bad"}`}>
                  {status.toUpperCase()}
                </span>
              </td>
              <td>{str(c.detail)}</td>
              <td>
                {ev
                  ? (
                    <>
                      <span class="mono">{str(ev.snapshotId)}</span>{" "}
                      <Short value={ev.payloadSha256} keep={8} />
                    </>
                  )
                  : <span class="muted">none (skipped)</span>}
              </td>
            </tr>
          );
        })}
      </Table>
      <LeftOut id={id} total={checks.length} shown={sorted.length} />
    </>
  );
}

const INVENTORY_STATUS: Record<string, string> = {
  "no-snapshot": "not read: no snapshot of its inventory label at start",
  unreadable: "not read: the adapter could not read the snapshot",
  "not-supported": "not read: the adapter reports no inventory",
};

function Lab({ v, id }: { v: Record<string, unknown>; id: string }) {
  const devices = Array.isArray(v.devices) ? v.devices.filter(isObj) : [];
  const decrypt = isObj(v.decrypt) ? v.decrypt : {};
  const inventory = isObj(v.inventory) ? v.inventory : null;
  if (devices.length > PRINT_ROWS) {
    const groups = new Map<string, Record<string, unknown>[]>();
    for (const d of devices) {
      const k = `${str(d.vendor)}\u0000${str(d.deviceRole)}`;
      groups.set(k, [...(groups.get(k) ?? []), d]);
    }
    const decryptOf = (d: Record<string, unknown>) => {
      const x = decrypt[String(d.id)];
      return isObj(x) ? str(x.state) : "not a firewall";
    };
    const inventoryOf = (d: Record<string, unknown>) => {
      const x = inventory?.[String(d.id)];
      return isObj(x) ? str(x.status) : "not recorded";
    };
    return (
      <>
        <p>{devices.length} enabled device(s), per vendor and role:</p>
        <Aggregate
          head={["Vendor", "Role", "Devices", "TLS decryption", ...(inventory ? ["Inventory"] : [])]}
          rows={[...groups.values()].map((ds) => [
            str(ds[0]!.vendor),
            str(ds[0]!.deviceRole),
            ds.length,
            counts(countBy(ds, decryptOf)),
            ...(inventory ? [counts(countBy(ds, inventoryOf))] : []),
          ])}
          attr="lab"
        />
        <LeftOut id={id} total={devices.length} shown={0} />
      </>
    );
  }
  return (
    <Table
      head={[
        "Device",
        "Vendor",
        "Role",
        "TLS decryption",
        ...(inventory ? ["Model / software / serial"] : []),
      ]}
      widths={inventory ? [25, 13, 9, 18, 35] : [34, 18, 12, 36]}
      attr="lab"
    >
      {devices.length === 0 && (
        <tr>
          <td colSpan={inventory ? 5 : 4} class="muted">No enabled device.</td>
        </tr>
      )}
      {devices.map((d) => {
        const dec = isObj(decrypt[String(d.id)]) ? decrypt[String(d.id)] as Record<string, unknown> : null;
        const inv = inventory && isObj(inventory[String(d.id)])
          ? inventory[String(d.id)] as Record<string, unknown>
          : null;
        return (
          <tr>
            <td>
              {str(d.hostname)}
              <span class="sub">
                <Short value={d.id} keep={8} />
              </span>
            </td>
            <td class="nw">{str(d.vendor)}</td>
            <td>{str(d.deviceRole)}</td>
            <td>
              {dec
                ? (
                  <>
                    <span class={`chip ${dec.state === "on" || dec.state === "off" ? dec.state : "unknown"}`}>
                      {str(dec.state)}
                    </span>{" "}
                    {dec.ruleCount !== null && dec.ruleCount !== undefined ? `${dec.ruleCount} rule(s)` : ""}
                    {dec.snapshotId ? <span class="sub">snapshot {str(dec.snapshotId)}</span> : null}
                  </>
                )
                : <span class="muted">not a firewall</span>}
            </td>
            {inventory && (
              <td>
                {inv?.status === "read"
                  ? `${str(inv.model)} / ${str(inv.softwareVersion)} / ${str(inv.serialNumber)}`
                  : <span class="warn-text">{INVENTORY_STATUS[String(inv?.status)] ?? "not recorded"}</span>}
              </td>
            )}
          </tr>
        );
      })}
    </Table>
  );
}

function Snapshots({ v }: { v: unknown[] }) {
  const rows = v.filter(isObj);
  if (!rows.length) return <p class="muted">No snapshot was stored during the run.</p>;
  if (rows.length > PRINT_ROWS) {
    const labels = new Map<string, Record<string, unknown>[]>();
    for (const s of rows) labels.set(str(s.endpointLabel), [...(labels.get(str(s.endpointLabel)) ?? []), s]);
    return (
      <>
        <p>{rows.length} snapshot(s) stored during the run, per label:</p>
        <Aggregate
          head={["Label", "Snapshots", "Devices", "Last collected"]}
          rows={[...labels].map(([label, ss]) => [
            <span key="label" class="mono">{label}</span>,
            ss.length,
            new Set(ss.map((s) => str(s.deviceHostname))).size,
            date(ss.map((s) => str(s.collectedAt)).sort().at(-1)),
          ])}
          attr="snapshots"
        />
        <LeftOut id="snapshots" total={rows.length} shown={0} />
      </>
    );
  }
  return (
    <Table
      head={["Snapshot", "Device", "Label", "Payload SHA-256", "Collected"]}
      widths={[9, 25, 21, 20, 25]}
      attr="snapshots"
    >
      {rows.map((s) => (
        <tr>
          <td class="mono">{str(s.snapshotId)}</td>
          <td>{str(s.deviceHostname)}</td>
          <td class="mono">{str(s.endpointLabel)}</td>
          <td>
            <Short value={s.payloadSha256} keep={12} />
          </td>
          <td class="nw">{date(s.collectedAt)}</td>
        </tr>
      ))}
    </Table>
  );
}

function Alerts({ v }: { v: unknown[] }) {
  const rows = v.filter(isObj);
  if (!rows.length) return <p class="muted">No TLSDecryptModeChanged alert was raised during the run.</p>;
  return (
    <>
      <Table head={["Time", "Device", "Change", "Snapshot"]} widths={[25, 30, 30, 15]} attr="alerts">
        {rows.slice(0, PRINT_PROBLEMS).map((a) => (
          <tr class="hl-bad">
            <td class="nw">{date(a.at)}</td>
            <td>{str(a.deviceHostname)}</td>
            <td>
              TLS decryption {str(a.from)} → {str(a.to)}
            </td>
            <td class="mono">{str(a.snapshotId)}</td>
          </tr>
        ))}
      </Table>
      <LeftOut id="decrypt-alerts" total={rows.length} shown={Math.min(rows.length, PRINT_PROBLEMS)} />
    </>
  );
}

function Members({ v }: { v: Record<string, unknown> }) {
  return (
    <Table head={["Member", "Value"]} widths={[30, 70]} attr="members">
      {Object.entries(v).map(([k, x]) => (
        <tr>
          <td class="mono">{k}</td>
          <td>
            {typeof x === "string" && /^[0-9a-f]{64}$/.test(x)
              ? <Short value={x} keep={16} />
              : isObj(x) || Array.isArray(x)
              ? (
                <span class="mono small">
                  {JSON.stringify(x).length > 160
                    ? `${Object.keys(x).length} item(s); in full in the appendix`
                    : JSON.stringify(x)}
                </span>
              )
              : str(x)}
          </td>
        </tr>
      ))}
    </Table>
  );
}

/**
 * The table of an annex, or null when its body is not JSON of a known shape (then only the appendix shows
 * it).
 */
export function AnnexTable({ id, body }: { id: string; body: string }) {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return null;
  }
  if (id.startsWith("preflight-") && isObj(v) && Array.isArray(v.checks)) return <Preflight v={v} id={id} />;
  if ((id === "lab-at-start" || id === "lab-at-end") && isObj(v)) return <Lab v={v} id={id} />;
  if (id === "snapshots" && Array.isArray(v)) return <Snapshots v={v} />;
  if (id === "decrypt-alerts" && Array.isArray(v)) return <Alerts v={v} />;
  if (id === "configuration-drift" && isObj(v)) return <DriftTable v={v} />;
  if (isObj(v)) return <Members v={v} />;
  return null;
}
