// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 50 point 4, the automatic write-back (docs/netbox.md "Writing verdicts back"): `netbox_journal` becomes
// a durable queue. With DUT_NETBOX_WRITEBACK=on a run's finish writes one `pending` row per device of the run
// in its own transaction; the write-back worker claims due rows (`next_at`, a lease, FOR UPDATE SKIP LOCKED),
// posts the journal entry and records `posted`, or `failed` with the reason and the next attempt (backoff,
// NetBox's Retry-After). A row is never dropped: a failed one stays queued until it is posted.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table netbox_journal drop constraint if exists netbox_journal_status_check`.execute(db);
  await sql`alter table netbox_journal add constraint netbox_journal_status_check
    check (status in ('pending', 'posted', 'failed'))`.execute(db);
  await sql`alter table netbox_journal add column device_id text`.execute(db);
  await sql`alter table netbox_journal add column next_at timestamptz`.execute(db);
  await sql`alter table netbox_journal add column lease_until timestamptz`.execute(db);
  await sql`create index netbox_journal_queued on netbox_journal (next_at) where next_at is not null`
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists netbox_journal_queued`.execute(db);
  await sql`delete from netbox_journal where status = 'pending'`.execute(db);
  await sql`alter table netbox_journal drop column lease_until`.execute(db);
  await sql`alter table netbox_journal drop column next_at`.execute(db);
  await sql`alter table netbox_journal drop column device_id`.execute(db);
  await sql`alter table netbox_journal drop constraint if exists netbox_journal_status_check`.execute(db);
  await sql`alter table netbox_journal add constraint netbox_journal_status_check
    check (status in ('posted', 'failed'))`.execute(db);
}
