// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable("devices")
    .addColumn("id", "uuid", (c) => c.primaryKey())
    .addColumn("hostname", "text", (c) => c.notNull().unique())
    .addColumn("vendor", "text", (c) => c.notNull())
    .addColumn("device_role", "text")
    .addColumn("base_url", "text", (c) => c.notNull())
    .addColumn("username", "text", (c) => c.notNull())
    .addColumn("password_enc", "text", (c) => c.notNull())
    .addColumn(
      "tls_verify_mode",
      "text",
      (c) => c.notNull().check(sql`tls_verify_mode in ('strict','self-signed','insecure')`),
    )
    .addColumn("poll_interval_seconds", "integer", (c) => c.notNull().check(sql`poll_interval_seconds >= 30`))
    .addColumn("notes", "text")
    .addColumn("enabled", "boolean", (c) => c.notNull().defaultTo(true))
    .addColumn("last_poll_at", "timestamptz")
    .addColumn("last_poll_status", "text")
    .addColumn("last_poll_error", "text")
    .addColumn("pinned_cert_sha256", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema.createTable("snapshot_payloads")
    .addColumn("sha256", "text", (c) => c.primaryKey())
    // The RFC 8785 canonical JSON text: exactly the bytes `sha256` hashes (jsonb would re-encode them).
    .addColumn("payload", "text", (c) => c.notNull())
    .addColumn("size_bytes", "integer", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema.createTable("snapshots")
    .addColumn("id", "bigint", (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn("device_id", "uuid", (c) => c.notNull().references("devices.id").onDelete("cascade"))
    .addColumn("endpoint_label", "text", (c) => c.notNull())
    .addColumn("payload_sha256", "text", (c) => c.notNull().references("snapshot_payloads.sha256"))
    .addColumn("collected_at", "timestamptz", (c) => c.notNull())
    .addColumn("test_run_execution_id", "uuid")
    .addColumn("adapter_module", "text", (c) => c.notNull())
    .addColumn("adapter_version", "text", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("snapshots_device_label_id").on("snapshots")
    .columns(["device_id", "endpoint_label", "id desc"]).execute();
  await db.schema.createIndex("snapshots_device_id").on("snapshots").columns(["device_id", "id desc"])
    .execute();
  await db.schema.createIndex("snapshots_label_id").on("snapshots").columns(["endpoint_label", "id desc"])
    .execute();
  await db.schema.createIndex("snapshots_run_id").on("snapshots").columns([
    "test_run_execution_id",
    "id desc",
  ])
    .where(sql.ref("test_run_execution_id"), "is not", null).execute();
  await db.schema.createIndex("snapshots_payload").on("snapshots").column("payload_sha256").execute();

  await db.schema.createTable("snapshot_latest")
    .addColumn("device_id", "uuid", (c) => c.notNull().references("devices.id").onDelete("cascade"))
    .addColumn("endpoint_label", "text", (c) => c.notNull())
    .addColumn("snapshot_id", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("snapshot_latest_pk", ["device_id", "endpoint_label"])
    .execute();

  // Snapshots are append-only: UPDATE is refused; DELETE only as the cascade of deleting a device
  // (a cascade runs inside the foreign-key trigger, so the trigger depth is above 1).
  await sql`
    create function snapshots_append_only() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' then
        raise exception 'snapshots are append-only: UPDATE refused' using errcode = 'P0001';
      end if;
      if pg_trigger_depth() < 2 then
        raise exception 'snapshots are append-only: delete the device to delete its snapshots' using errcode = 'P0001';
      end if;
      return old;
    end $$`.execute(db);
  await sql`create trigger snapshots_no_update before update on snapshots
    for each row execute function snapshots_append_only()`.execute(db);
  await sql`create trigger snapshots_no_delete before delete on snapshots
    for each row execute function snapshots_append_only()`.execute(db);

  await db.schema.createTable("test_runs")
    .addColumn("run_id", "bigint", (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn("execution_id", "uuid", (c) => c.notNull().unique())
    .addColumn("plan_identifier", "text", (c) => c.notNull())
    .addColumn("plan_display_name", "text", (c) => c.notNull())
    .addColumn("plan_catalog_version", "integer", (c) => c.notNull())
    .addColumn("plan_json", "jsonb", (c) => c.notNull())
    .addColumn("plan_snapshot_sha256", "text", (c) => c.notNull())
    .addColumn("license_id", "text", (c) => c.notNull())
    .addColumn("notes", "text")
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('active','finished')`))
    .addColumn("started_at", "timestamptz", (c) => c.notNull())
    .addColumn("ended_at", "timestamptz")
    .addColumn("outcome", "text")
    .addColumn("start_state_json", "jsonb", (c) => c.notNull())
    .addColumn("preflight_json", "jsonb", (c) => c.notNull())
    .addColumn("results_json", "jsonb")
    .addColumn("report_json", "text")
    .addColumn("report_sha256", "text")
    .execute();
  // At most one active run.
  await sql`create unique index test_runs_one_active on test_runs ((true)) where status = 'active'`.execute(
    db,
  );

  await db.schema.createTable("run_alerts")
    .addColumn("id", "bigint", (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn("execution_id", "uuid", (c) => c.notNull().references("test_runs.execution_id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("at", "timestamptz", (c) => c.notNull())
    .addColumn("device_id", "uuid", (c) => c.notNull())
    .addColumn("device_hostname", "text", (c) => c.notNull())
    .addColumn("from_state", "text", (c) => c.notNull())
    .addColumn("to_state", "text", (c) => c.notNull())
    .addColumn("snapshot_id", "bigint", (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (
    const t of ["run_alerts", "test_runs", "snapshot_latest", "snapshots", "snapshot_payloads", "devices"]
  ) {
    await db.schema.dropTable(t).ifExists().cascade().execute();
  }
  await sql`drop function if exists snapshots_append_only()`.execute(db);
}
