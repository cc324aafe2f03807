import { z } from "zod";

/** A whole-number variable with its bounds and default (config.ts's `int`). */
type Int = (min: number, max: number, def: number) => z.ZodType<number, string | undefined>;

/** The automatic NetBox write-back's variables (docs/netbox.md "Automatic write-back"), part of EnvSchema. */
export const netboxEnv = (int: Int) => ({
  DUT_NETBOX_WRITEBACK: z.enum(["on", "off"], { message: 'must be "on" or "off"' }).default("off").meta({
    description:
      "`on`: each finished run's verdict is written back to NetBox (DUT_NETBOX_URL), one journal " +
      "entry per device, queued in the run's finish and retried until posted (docs/netbox.md)",
  }),
  DUT_NETBOX_URL: z.url({
    protocol: /^https?$/,
    message: "must be an http(s):// URL like https://netbox.example",
  })
    .optional().meta({
      description: "NetBox's base URL for the automatic write-back (required with DUT_NETBOX_WRITEBACK=on)",
      defaultLabel: "unset",
    }),
  DUT_NETBOX_TOKEN: z.string().trim().regex(
    /^((Bearer|Token) )?(nbt_[A-Za-z0-9]+\.[A-Za-z0-9]+|[0-9a-fA-F]{40})$/,
    "must be a NetBox v2 token (nbt_<key>.<token>) or a v1 token (40 hexadecimal characters)",
  ).optional().meta({
    description: "the write-back's NetBox token (v2 `nbt_…` sent as Bearer, v1 as Token); needs " +
      "`extras.add_journalentry` and `dcim.view_device` (required with DUT_NETBOX_WRITEBACK=on)",
    defaultLabel: "unset",
  }),
  DUT_NETBOX_CA_FILE: z.string().trim().min(1).optional().meta({
    description: "PEM bundle trusted for NetBox's TLS certificate in addition to the system store",
    defaultLabel: "unset",
  }),
  DUT_NETBOX_TIMEOUT_MS: int(100, 300_000, 30_000).meta({
    description: "time limit of one NetBox request of the write-back",
  }),
  DUT_NETBOX_POLL_MS: int(10, 60_000, 1_000).meta({
    description: "how often the write-back worker reads its queue",
  }),
  DUT_NETBOX_RETRY_BASE_MS: int(1, 3_600_000, 30_000).meta({
    description: "first write-back retry delay (doubles per attempt, with jitter; NetBox's Retry-After wins)",
  }),
  DUT_NETBOX_RETRY_MAX_DELAY_SECONDS: int(1, 86_400, 3_600).meta({
    description: "longest delay between two write-back attempts (a failed entry is retried until posted)",
  }),
});
