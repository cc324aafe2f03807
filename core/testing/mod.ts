/**
 * Test helpers for module authors: HTTPS device simulators, a replay server for captured device answers,
 * certificates, the adapter contract kit (with its facts step), database fixtures (PGlite and PostgreSQL),
 * an in-process app and sealed report fixtures (the v1 report and one built by the current code).
 *
 * @module
 */
export * from "./simulator.ts";
export * from "./certs.ts";
export * from "./contract.ts";
export * from "./db.ts";
export * from "./app.ts";
export { SessionRegistry } from "../src/devices/sessions.ts";
export { DEFAULT_LIMITS, type TransportLimits } from "../src/transport/transport.ts";
export { checkApplies, type CheckResult, evaluateCheck } from "../src/preflight/engine.ts";
export * from "./process.ts";
export * from "./replay.ts";
export * from "./facts.ts";
export * from "./volatile.ts";
export * from "./check_fixture.ts";
export * from "./report_fixture.ts";
export * from "./report_fixture_current.ts";
