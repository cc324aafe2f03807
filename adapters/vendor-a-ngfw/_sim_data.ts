// Default device objects of the simulated firewall, in the FDM REST shapes (field names from the FDM
// Swagger spec and public captures; see README.md "Sources"). Values are lab values, not real devices'.

type Json = Record<string, unknown>;

export const ZONE_INSIDE = {
  id: "90c377e0-b3e5-11e5-8db8-651556da7898",
  type: "securityzone",
  name: "inside_zone",
};
export const ZONE_OUTSIDE = {
  id: "b1af33e1-b3e5-11e5-8db8-afdc0be5453e",
  type: "securityzone",
  name: "outside_zone",
};
export const INTERNAL_CA = {
  id: "d4f2b1a0-4d43-11eb-9e04-8b5c5a1f0c11",
  type: "internalcacertificate",
  name: "NGFW-Default-InternalCA",
};

export function defaultSystemInfo(now: number): Json {
  return {
    applianceUuid: "6a1e2c4d-0b7f-4e58-9a3c-5d2f8e1b7c90",
    currentTime: now,
    databaseInfo: {
      buildVersion: "7.2.5",
      configDBVersion: "k3v9n2p7q1x4z",
      firewallConfigChecksum: "m8c2r5t1w9y3b",
      id: "00000001-0000-0000-0000-000000000001",
      isBootstrapSuccessFul: true,
      restoredFromBackup: "NONE",
      schemaVersion: "208",
      softwareVersion: "7.2.5-208",
      type: "databaseinfo",
    },
    geolocationVersion: {
      geolocationDbVersion: "2022-05-11-103",
      id: "e2822936-b3ff-11e5-b2b0-75809939b187",
      lastSuccessGeolocationDate: "2024-03-02 04:10:12Z",
      name: "2022-05-11-103",
      type: "geolocationversion",
    },
    id: "default",
    ipv4: "192.0.2.10",
    ipv6: null,
    managementInterfaceName: "br1",
    modelId: "D",
    modelNumber: "77",
    platformModel: "Cisco Firepower 2110 Threat Defense",
    securityIntelligenceFeedsInfo: {
      id: "f78b4875-4d43-11eb-9e04-838d9f38aad2",
      lastFeedsUpdateDate: "2024-03-02 04:00:00Z",
      type: "securityintelligencefeedsinfo",
    },
    serialNumber: "JAD0000LAB1",
    snortVersion: {
      id: "00000003-0000-0000-0000-000000000003",
      name: "3.1.21.501-26",
      snortPackage: "/ngfw/var/sf/snort-3.1.21.501-26/snort-77-3.1.21.501-26-daq14.tar.bz2",
      snortVersion: "3.1.21.501-26",
      type: "snortversion",
    },
    softwareVersion: "7.2.5-208",
    sruVersion: {
      id: "00000003-0000-0000-0000-000000000001",
      lastSuccessSRUDate: "2024-03-01 23:12:33Z",
      name: "2024-02-28-001-vrt",
      soMd5Checksum: "0f3e2d1c4b5a69788796a5b4c3d2e1f0",
      sruVersion: "2024-02-28-001-vrt",
      type: "sruversion",
    },
    systemUptime: now - 9 * 24 * 3600_000,
    type: "systeminformation",
    vdbVersion: {
      appIDRevision: "139",
      id: "00000003-0000-0000-0000-000000000002",
      lastSuccessVDBDate: "2024-03-01 23:10:00Z",
      name: "365",
      navlRevision: "125",
      type: "vdbversion",
      vdbCurrentBuild: "0",
      vdbCurrentVersion: "365",
      vdbReleaseDate: "2024-01-15 16:38:24",
    },
  };
}

/** A `DeploymentStatus` job as `GET /operational/deploy` lists it. */
export function deploymentJob(state: string, queuedTime: number): Json {
  const running = state === "QUEUED" || state === "DEPLOYING";
  return {
    version: "a1b2c3d4e5f6g",
    name: `Deployment ${new Date(queuedTime).toISOString()}`,
    statusMessage: running ? "Deploying" : state === "DEPLOYED" ? "Deployed" : "Deployment failed",
    statusMessages: [],
    cliErrorMessage: state === "DEPLOY_FAILED" ? "ERROR: simulated CLI failure" : null,
    state,
    queuedTime,
    startTime: state === "QUEUED" ? -1 : queuedTime + 1_000,
    endTime: running ? -1 : queuedTime + 61_000,
    id: crypto.randomUUID(),
    type: "deploymentstatus",
  };
}

/** A `BaseEntityDiff` as `GET /operational/pendingchanges` lists it. */
export function pendingChange(entityType: string, entityName: string | null): Json {
  return {
    entityId: crypto.randomUUID(),
    entityName,
    entityType,
    referencesAdded: [],
    referencesDeleted: [],
    type: "entityupdate",
    valuesAdded: [],
    valuesDeleted: [],
    valuesUpdated: [],
  };
}

export function defaultSslPolicy(): Json {
  return {
    version: "p0l1cyv3rs10n",
    name: "NGFW-Default-SSL-Policy",
    defaultAction: {
      policyAction: "DO_NOT_DECRYPT",
      eventLogAction: "LOG_NONE",
      syslogServer: null,
      type: "sslpolicydefaultaction",
    },
    decryptionCACertificate: INTERNAL_CA,
    undecryptableActions: {
      compressedSession: "INHERIT_DEFAULT_ACTION",
      decryptionErrors: "BLOCK",
      handShakeErrors: "INHERIT_DEFAULT_ACTION",
      sessionNotCached: "INHERIT_DEFAULT_ACTION",
      sslV2Session: "INHERIT_DEFAULT_ACTION",
      unknownCipherSuite: "INHERIT_DEFAULT_ACTION",
      unsupportedCipherSuite: "INHERIT_DEFAULT_ACTION",
      type: "sslundecryptableactions",
    },
    id: "3f4e5d6c-7b8a-11eb-9e04-2b3c4d5e6f70",
    type: "sslpolicy",
  };
}

/** An `SSLRule`; `ruleAction` is one of DECRYPT_RE_SIGN, DECRYPT_KNOWN_KEY, DO_NOT_DECRYPT, BLOCK. */
export function sslRule(name: string, ruleAction: string, ruleId: number): Json {
  return {
    version: "r0l3v3rs10n",
    name,
    ruleId,
    sourceZones: [ZONE_INSIDE],
    destinationZones: [ZONE_OUTSIDE],
    sourceNetworks: [],
    destinationNetworks: [],
    sourcePorts: [],
    destinationPorts: [],
    ruleAction,
    eventLogAction: "LOG_NONE",
    users: [],
    id: crypto.randomUUID(),
    type: "sslrule",
  };
}

export function defaultAccessPolicy(): Json {
  return {
    version: "acc3ssv3rs10n",
    name: "NGFW-Access-Policy",
    defaultAction: {
      action: "DENY",
      eventLogAction: "LOG_NONE",
      intrusionPolicy: null,
      syslogServer: null,
      type: "accessdefaultaction",
    },
    sslPolicy: null,
    id: "c78e66bc-cb57-43fe-bcbf-96b79b3475b3",
    identityPolicySetting: null,
    securityIntelligence: null,
    type: "accesspolicy",
  };
}

export function accessRule(name: string, ruleAction: string, ruleId: number): Json {
  return {
    version: "ru13v3rs10n",
    name,
    ruleId,
    sourceZones: [ZONE_INSIDE],
    destinationZones: [ZONE_OUTSIDE],
    sourceNetworks: [],
    destinationNetworks: [],
    sourcePorts: [],
    destinationPorts: [],
    ruleAction,
    eventLogAction: "LOG_FLOW_END",
    users: [],
    embeddedAppFilter: null,
    urlFilter: null,
    intrusionPolicy: null,
    filePolicy: null,
    logFiles: false,
    syslogServer: null,
    id: crypto.randomUUID(),
    type: "accessrule",
  };
}

export function ntpObject(servers: string[], enabled = true): Json {
  return {
    version: "ntpv3rs10n01",
    name: "NTP",
    ntpServers: servers,
    enabled,
    id: "5f6a7b8c-4d43-11eb-9e04-1f2e3d4c5b6a",
    type: "ntp",
  };
}

/** Standalone node, as DevNet's "configure and join an HA pair" guide shows it before the join. */
export function standaloneHaStatus(): Json {
  return {
    nodeRole: null,
    nodeState: "SINGLE_NODE",
    peerNodeState: "HA_UNKNOWN_NODE",
    configStatus: "UNKNOWN",
    haHealthStatus: "HEALTHY",
    id: "default",
    type: "hastatus",
  };
}

/** Data interfaces of a 12-port appliance plus its management port (`PhysicalInterface`). */
export function defaultInterfaces(): Json[] {
  const names: Record<number, [string, string]> = {
    1: ["outside", "198.51.100.1"],
    2: ["inside", "203.0.113.1"],
  };
  const out: Json[] = [{
    version: "ifv3rs10n000",
    name: "diagnostic",
    description: null,
    hardwareName: "Management1/1",
    monitorInterface: false,
    ipv4: { ipType: "STATIC", ipAddress: null, dhcp: false, type: "interfaceipv4" },
    managementOnly: true,
    managementInterface: true,
    mode: "ROUTED",
    linkState: "UP",
    mtu: 1500,
    enabled: true,
    id: "0a1b2c3d-0000-11eb-9e04-000000000000",
    type: "physicalinterface",
  }];
  for (let port = 1; port <= 12; port++) {
    const named = names[port];
    out.push({
      version: `ifv3rs10n${String(port).padStart(3, "0")}`,
      name: named ? named[0] : "",
      description: null,
      hardwareName: `Ethernet1/${port}`,
      monitorInterface: Boolean(named),
      ipv4: named
        ? {
          ipType: "STATIC",
          defaultRouteUsingDHCP: false,
          ipAddress: { ipAddress: named[1], netmask: "255.255.255.0", type: "haipv4address" },
          type: "interfaceipv4",
        }
        : { ipType: "STATIC", ipAddress: null, type: "interfaceipv4" },
      managementOnly: false,
      managementInterface: false,
      mode: "ROUTED",
      linkState: named ? "UP" : "DOWN",
      mtu: 1500,
      enabled: Boolean(named),
      id: `0a1b2c3d-${String(port).padStart(4, "0")}-11eb-9e04-000000000000`,
      type: "physicalinterface",
    });
  }
  return out;
}
