import { asDeviceError, connectDevice } from "./connect.ts";
import { CredentialError } from "./credentials.ts";
import { credentialKeyOf, type DeviceRow } from "./devices.ts";
import { DeviceError } from "./errors.ts";
import { deviceTarget } from "./poller/cycle.ts";
import type { Services } from "./services.ts";

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

/** POST /devices/{id}/test: authenticate, read the CPU monitor, report latency. Never throws for device faults. */
export async function testConnection(
  svc: Services,
  row: DeviceRow,
): Promise<{ ok: boolean; detail: string; latencyMs: number }> {
  const t0 = performance.now();
  const ms = () => Math.round(performance.now() - t0);
  try {
    const reg = svc.registry.adapters.get(row.vendor);
    if (!reg) throw new DeviceError("adapter_error", `No adapter is enabled for vendor "${row.vendor}"`);
    const password = await svc.devices.decryptPassword(row).catch((e) => {
      throw e instanceof CredentialError ? new DeviceError("credential_error", e.message) : e;
    });
    await using conn = await connectDevice({
      adapter: reg.adapter,
      device: deviceTarget(row),
      credentials: { username: row.username, password },
      credentialKey: await credentialKeyOf(row),
      sessions: svc.sessions,
      limits: svc.limits,
      signal: AbortSignal.timeout(svc.config.DUT_POLL_DEVICE_TIMEOUT_SECONDS * 1000),
      onPin: (fp) => svc.devices.pin(row.id, fp),
    });
    const r = await conn.session.testConnection();
    const latency = ms();
    const tls = row.tls_verify_mode === "insecure"
      ? " WARNING: TLS verification is disabled (insecure); the device's identity was not checked."
      : row.tls_verify_mode === "self-signed" && !row.pinned_cert_sha256 && conn.transport.pinnedCertSha256
      ? ` Certificate pinned (sha256 ${conn.transport.pinnedCertSha256}).`
      : "";
    return {
      ok: true,
      detail: `Authentication succeeded; CPU monitor reachable: ${r.cpuDetail}; latency ${latency} ms.${tls}`,
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
