/**
 * `@dutlab/core`: the microkernel of dutlab. Contracts for adapters, checks and plugins, the device
 * transport, errors and hashing. Knows no vendor.
 *
 * @module
 */
export * from "./src/adapter.ts";
export * from "./src/check.ts";
export * from "./src/plan.ts";
export {
  type AdapterCapabilities,
  type Capability,
  type FactName,
  planSelects,
  serves,
} from "./src/capability.ts";
export * from "./src/errors.ts";
export { canonicalJson, jcsSha256, sha256Hex } from "./src/util/hash.ts";
export type { DeviceHttp, DeviceRequest, DeviceResponse } from "./src/transport/types.ts";
export type { Logger } from "./src/util/log.ts";
export { CORE_VERSION } from "./src/version.ts";
export { stripVolatile } from "./src/snapshots/volatile.ts";
export type { CheckResult, Evidence } from "./src/preflight/types.ts";
export type { LoadedModule, LoadedModules } from "./src/registry.ts";
export { SessionRegistry } from "./src/devices/sessions.ts";
