/**
 * Test helpers for module authors: HTTPS device simulators, certificates, the adapter contract kit
 * and database fixtures.
 *
 * @module
 */
export * from "./simulator.ts";
export * from "./certs.ts";
export * from "./contract.ts";
