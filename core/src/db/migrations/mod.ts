import type { Migration, MigrationProvider } from "kysely/migration";
import * as m0001 from "./2026_11_21_0001_init.ts";
import * as m0002 from "./2026_11_21_0002_snapshot_payloads_immutable.ts";
import * as m0003 from "./2026_11_21_0003_slimmer_snapshot_indexes.ts";
import * as m0005 from "./2026_11_23_0005_finished_runs_immutable.ts";
import * as m0006 from "./2026_11_23_0006_report_signatures.ts";
import * as m0007 from "./2026_11_23_0007_tokens_audit_events.ts";
import * as m0008 from "./2026_11_23_0008_audited_delete_signatures.ts";
import * as m0009 from "./2026_11_24_0009_snapshot_payload_changed.ts";
import * as m0010 from "./2026_11_24_0010_devices_version.ts";
import * as m0011 from "./2026_11_24_0011_snapshot_stable_changed.ts";
import * as m0012 from "./2026_11_25_0012_pdf_certificates_attestations.ts";
import * as m0013 from "./2026_11_25_0013_device_tags_start_gate.ts";
import * as m0014 from "./2026_11_25_0014_snapshot_prunes.ts";
import * as m0015 from "./2026_11_25_0015_compact_snapshots.ts";
import * as m0016 from "./2026_11_25_0016_labs.ts";
import * as m0017 from "./2026_11_25_0017_narrow_snapshots.ts";
import * as m0018 from "./2026_11_25_0018_remark_stable.ts";
import * as m0019 from "./2026_11_26_0019_snapshots_version.ts";
import * as m0020 from "./2026_11_26_0020_snapshot_rows_delete_guard.ts";
import * as m0021 from "./2026_11_27_0021_latest_hash_time.ts";
import * as m0022 from "./2026_11_27_0022_cheaper_write_triggers.ts";
import * as m0023 from "./2026_11_28_0023_prune_counts_array.ts";
import * as m0024 from "./2026_11_29_0024_hostname_case_insensitive.ts";
import * as m0025 from "./2026_11_29_0025_poll_leases.ts";
import * as m0026 from "./2026_11_29_0026_testbeds_reservations.ts";
import * as m0027 from "./2026_11_29_0027_webhooks.ts";
import * as m0028 from "./2026_11_29_0028_netbox.ts";
import * as m0029 from "./2026_11_29_0029_netbox_journal_queue.ts";
import * as m0030 from "./2026_11_29_0030_table_versions_notify.ts";

/** Static migration provider: every migration, by its date-prefixed name. */
export const migrationProvider: MigrationProvider = {
  getMigrations(): Promise<Record<string, Migration>> {
    return Promise.resolve({
      "2026_11_21_0001_init": m0001,
      "2026_11_21_0002_snapshot_payloads_immutable": m0002,
      "2026_11_21_0003_slimmer_snapshot_indexes": m0003,
      "2026_11_23_0005_finished_runs_immutable": m0005,
      "2026_11_23_0006_report_signatures": m0006,
      "2026_11_23_0007_tokens_audit_events": m0007,
      "2026_11_23_0008_audited_delete_signatures": m0008,
      "2026_11_24_0009_snapshot_payload_changed": m0009,
      "2026_11_24_0010_devices_version": m0010,
      "2026_11_24_0011_snapshot_stable_changed": m0011,
      "2026_11_25_0012_pdf_certificates_attestations": m0012,
      "2026_11_25_0013_device_tags_start_gate": m0013,
      "2026_11_25_0014_snapshot_prunes": m0014,
      "2026_11_25_0015_compact_snapshots": m0015,
      "2026_11_25_0016_labs": m0016,
      "2026_11_25_0017_narrow_snapshots": m0017,
      "2026_11_25_0018_remark_stable": m0018,
      "2026_11_26_0019_snapshots_version": m0019,
      "2026_11_26_0020_snapshot_rows_delete_guard": m0020,
      "2026_11_27_0021_latest_hash_time": m0021,
      "2026_11_27_0022_cheaper_write_triggers": m0022,
      "2026_11_28_0023_prune_counts_array": m0023,
      "2026_11_29_0024_hostname_case_insensitive": m0024,
      "2026_11_29_0025_poll_leases": m0025,
      "2026_11_29_0026_testbeds_reservations": m0026,
      "2026_11_29_0027_webhooks": m0027,
      "2026_11_29_0028_netbox": m0028,
      "2026_11_29_0029_netbox_journal_queue": m0029,
      "2026_11_29_0030_table_versions_notify": m0030,
    });
  },
};
