import { DeviceError } from "../errors.ts";

const TLS_CODES = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "HOSTNAME_MISMATCH",
  "ERR_SSL_WRONG_VERSION_NUMBER",
]);
const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ECONNRESET",
  "EPIPE",
  "ECONNABORTED",
]);

/** Classify a socket-level error into a poll status. */
export function classifyNetworkError(err: unknown, where: string): DeviceError {
  if (err instanceof DeviceError) return err;
  const e = err as { code?: string; message?: string; name?: string };
  const code = e?.code ?? "";
  const msg = String(e?.message ?? err);
  if (TLS_CODES.has(code) || /certificate|cert|tls|ssl|handshake/i.test(msg)) {
    return new DeviceError("tls_error", `TLS verification failed for ${where}: ${code || msg}`, {
      cause: err,
    });
  }
  if (code === "ETIMEDOUT" || e?.name === "TimeoutError") {
    return new DeviceError("timeout", `Timed out connecting to ${where}`, { cause: err });
  }
  if (UNREACHABLE_CODES.has(code) || /refused|not found|unreachable|reset/i.test(msg)) {
    return new DeviceError("unreachable", `Cannot reach ${where}: ${code || msg}`, { cause: err });
  }
  return new DeviceError("unreachable", `Connection to ${where} failed: ${code || msg}`, { cause: err });
}
