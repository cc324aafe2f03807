/**
 * The declared face of the self-contained report verifier (`tools/verify_report_src.ts`, bundled into
 * `tools/verify_report.ts`): signature and digest checks, the evidence bundle reader and the replay. Not
 * published (the export map of `core/deno.json` does not list it); `deno task boundaries` lets `tools/` reach
 * core through the published faces, this file and `core/ops.ts` only.
 *
 * @module
 */
export { buildRegistry } from "./src/registry.ts";
export {
  type BundleFiles,
  checkManifest,
  MANIFEST,
  readBundleArchive,
  replayInputsOf,
} from "./src/report/evidence_read.ts";
export { describeReplay, replayReport } from "./src/report/replay.ts";
export type { ReportData } from "./src/report/types.ts";
export { verifyReport } from "./src/report/verify.ts";
