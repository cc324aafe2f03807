/**
 * What changes on every poll of an NX-API REST switch without meaning a change (README "Volatile paths"):
 * clocks and uptimes of the system objects, and the CPU and memory gauges (with their `modTs`, which moves
 * whenever the gauge is refreshed).
 */
const attrs = (cls: string, names: string[]) => names.map((n) => `/imdata/*/${cls}/attributes/${n}`);

export const VOLATILE_PATHS = {
  system_info: [
    "/topSystem/imdata/*/topSystem/attributes/currentTime",
    "/topSystem/imdata/*/topSystem/attributes/systemUpTime",
    "/showVersion/imdata/*/sysmgrShowVersion/attributes/kernelUptime",
  ],
  cpu_usage: attrs("procSysCpuSummary", ["idle", "kernel", "user", "modTs"]),
  memory: attrs("procSysMem", ["free", "used", "modTs"]),
} as const;
