import { asDeviceError } from "./connect.ts";
import type { DeviceRow, DeviceStore } from "./store.ts";
import type { TransportLimits } from "../transport/transport.ts";

/** What a connection test uses of the services: the device store, the transport limits and the poll timeout. */
export interface ProbeServices {
  devices: Pick<DeviceStore, "connect">;
  limits: TransportLimits;
  config: { DUT_POLL_DEVICE_TIMEOUT_SECONDS: number };
}

const STAGE: Record<string, string> = {
  auth_failed: "Authentication failed",
  tls_error: "TLS verification failed",
  timeout: "Timed out",
  unreachable: "Device unreachable",
  http_error: "HTTP error",
  protocol_error: "Unexpected answer from the device",
  adapter_error: "Adapter error",
  credential_error: "Stored credential unusable",
};

/**
 * The detail of a passed connection test. A test that read no CPU figure does not claim a CPU monitor: it
 * says the device gave none, in the adapter's words.
 */
export function connectionDetail(
  r: { cpuDetail: string; cpuPercent: number | null },
  latencyMs: number,
  tlsNote = "",
): string {
  return r.cpuPercent === null
    ? `Authentication succeeded; no CPU figure: ${r.cpuDetail}; latency ${latencyMs} ms.${tlsNote}`
    : `Authentication succeeded; CPU monitor reachable: ${r.cpuDetail}; latency ${latencyMs} ms.${tlsNote}`;
}

/** POST /devices/{id}/test: authenticate, read the CPU monitor, report latency. Never throws for device faults. */
export async function testConnection(
  svc: ProbeServices,
  row: DeviceRow,
): Promise<{ ok: boolean; detail: string; latencyMs: number }> {
  const t0 = performance.now();
  const ms = () => Math.round(performance.now() - t0);
  try {
    const { conn } = await svc.devices.connect(
      row,
      svc.limits,
      AbortSignal.timeout(svc.config.DUT_POLL_DEVICE_TIMEOUT_SECONDS * 1000),
    );
    await using _closing = conn;
    const r = await conn.session.testConnection();
    const latency = ms();
    const tls = row.tls_verify_mode === "insecure"
      ? " WARNING: TLS verification is disabled (insecure); the device's identity was not checked."
      : row.tls_verify_mode === "self-signed" && !row.pinned_cert_sha256 && conn.transport.pinnedCertSha256
      ? ` Certificate pinned (sha256 ${conn.transport.pinnedCertSha256}).`
      : "";
    return {
      ok: true,
      detail: connectionDetail(r, latency, tls),
      latencyMs: latency,
    };
  } catch (e) {
    const err = asDeviceError(e);
    return {
      ok: false,
      detail: `${STAGE[err.status] ?? "Failed"} (${err.status}): ${err.message}`,
      latencyMs: ms(),
    };
  }
}
