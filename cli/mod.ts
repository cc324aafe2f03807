/**
 * `@dutlab/cli`: `dutlab`, the command-line client of a dutlab service, for operators and CI (README
 * "Command-line client"). It talks to the service over its HTTP API only, through the client types
 * generated from the service's OpenAPI document (`generated/dutlab-api.ts`, `deno task api:client`).
 *
 * @example
 * ```ts
 * import { EXIT, main } from "@dutlab/cli";
 * const code = await main(["preflight", "ngfw-throughput-decrypt-on", "--format", "junit", "--out", "pf.xml"]);
 * if (code === EXIT.failed) console.log("the lab is not ready");
 * ```
 * @module
 */
export { EXIT, type ExitCode } from "./_exit.ts";
export { main } from "./_main.ts";
