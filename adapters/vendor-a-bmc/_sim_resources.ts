// Resource trees of the simulated Redfish service. Shapes follow real Cisco IMC 4.1 captures
// (akaliwod/iserver doc/redfish-tests-cisco-ucsc-c220-m5sx) and the DMTF public-rackmount1 mockup
// (DMTF/Redfish-Publications, BSD-3-Clause); values are the simulator's own.

type Resource = Record<string, unknown>;

/** `cisco-imc`: Manager `CIMC`, System id = serial, Chassis `1`. `dmtf-mockup`: BMC / 437XR1138R2 / 1U, no NTP block. */
export type Layout = "cisco-imc" | "dmtf-mockup";
/** Where the CPU figure lives: host ProcessorMetrics, the BMC's ManagerDiagnosticData, or nowhere. */
export type CpuSource = "processor-metrics" | "manager-diagnostics" | "none";

/** Device state the tests change between polls. */
export interface BmcSimState {
  /** `NTP.NTPServers` as reported; `null` drops the NTP block from NetworkProtocol altogether. */
  ntpServers: (string | null)[] | null;
  /** Whether NTP is on (`NTP.ProtocolEnabled`). */
  ntpEnabled: boolean;
  /** The host's `PowerState`. */
  powerState: "On" | "Off";
  /** `Status.Health` of the resources (the system's `HealthRollup` too). */
  health: "OK" | "Warning" | "Critical";
  /** The BMC firmware version (Manager `FirmwareVersion`). */
  bmcFirmwareVersion: string;
  /** The host BIOS version (System `BiosVersion`). */
  biosVersion: string;
  /** `PowerControl[0].PowerConsumedWatts` of the chassis Power resource. */
  powerConsumedWatts: number;
  /** The inlet temperature sensor's reading, °C (Thermal). */
  inletTempCelsius: number;
  /** The CPU temperature sensor's reading, °C (Thermal). */
  cpuTempCelsius: number;
  /** The fan's reading, RPM (Thermal). */
  fanRpm: number;
  /** Host CPU1 load (ProcessorMetrics `KernelPercent` / `UserPercent`). */
  hostCpu: { kernelPercent: number; userPercent: number };
  /** The BMC's own load (ManagerDiagnosticData `ProcessorStatistics`). */
  bmcCpu: { kernelPercent: number; userPercent: number };
  /** Concurrent Redfish sessions the device allows. */
  sessionCap: number;
  /** `SessionService.SessionTimeout`: idle seconds before a session is dropped. */
  sessionTimeoutSeconds: number;
  /**
   * HTTP status of the session-limit answer. 400 with `GeneralError` + `SessionLimitExceeded` is what a
   * real Cisco IMC sent; Lenovo XCC documents 403, XCC3 503.
   */
  sessionLimitStatus: number;
}

export interface TreeOptions {
  layout: Layout;
  cpuSource: CpuSource;
  thermalPower: boolean;
  updateService: boolean;
}

/** Resource ids of a layout. */
export interface LayoutIds {
  /** Id of the ComputerSystem (`/redfish/v1/Systems/<id>`). */
  system: string;
  /** Id of the Manager (`/redfish/v1/Managers/<id>`). */
  manager: string;
  /** Id of the Chassis (`/redfish/v1/Chassis/<id>`). */
  chassis: string;
  /** Firmware inventory member ids. */
  firmware: string[];
  /** Base message registry version used in error bodies. */
  baseRegistry: string;
}

export const IDS: Record<Layout, LayoutIds> = {
  "cisco-imc": {
    system: "WZP22490ZCU",
    manager: "CIMC",
    chassis: "1",
    firmware: [
      "BIOS",
      "CIMC",
      "Board_Controller",
      "UCSC-RAID-M5-slot-MRAID",
      "X710DA4-slot-1",
      "X710DA4-slot-2",
      "X550-LOM-slot-L",
    ],
    baseRegistry: "Base.1.4.0",
  },
  "dmtf-mockup": {
    system: "437XR1138R2",
    manager: "BMC",
    chassis: "1U",
    firmware: ["BMC", "BIOS"],
    baseRegistry: "Base.1.19.0",
  },
};

export function defaultState(layout: Layout, sessionCap: number): BmcSimState {
  const cisco = layout === "cisco-imc";
  return {
    ntpServers: cisco ? ["192.0.2.123", "192.0.2.124"] : null,
    ntpEnabled: true,
    powerState: "On",
    health: "OK",
    bmcFirmwareVersion: cisco ? "4.1(3d)" : "1.45.455b66-rev4",
    biosVersion: cisco ? "C220M5.4.1.3i.0.0713210713" : "P79 v1.45 (12/06/2017)",
    powerConsumedWatts: 252,
    inletTempCelsius: 22,
    cpuTempCelsius: 48,
    fanRpm: 8400,
    hostCpu: { kernelPercent: 4.5, userPercent: 17.5 },
    bmcCpu: { kernelPercent: 12.5, userPercent: 23.5 },
    sessionCap,
    sessionTimeoutSeconds: 1800,
    sessionLimitStatus: cisco ? 400 : 503,
  };
}

const ref = (id: string) => ({ "@odata.id": id });

function collection(id: string, type: string, name: string, members: string[]): Resource {
  return {
    "@odata.id": id,
    "@odata.type": `#${type}.${type}`,
    Name: name,
    Members: members.map(ref),
    "Members@odata.count": members.length,
  };
}

/** Every resource of the simulated service by path (no trailing slash; the root is `/redfish/v1`). */
export function buildTree(
  opts: TreeOptions,
  state: BmcSimState,
  sessions: Array<{ id: string; user: string }>,
): Map<string, Resource> {
  const cisco = opts.layout === "cisco-imc";
  const ids = IDS[opts.layout];
  const v1 = "/redfish/v1";
  const sys = `${v1}/Systems/${ids.system}`;
  const mgr = `${v1}/Managers/${ids.manager}`;
  const ch = `${v1}/Chassis/${ids.chassis}`;
  const t = new Map<string, Resource>();
  const put = (r: Resource) => t.set(r["@odata.id"] as string, r);
  const status = { State: "Enabled", Health: state.health };

  const root: Resource = {
    "@odata.id": `${v1}/`,
    "@odata.type": cisco ? "#ServiceRoot.v1_5_0.ServiceRoot" : "#ServiceRoot.v1_18_0.ServiceRoot",
    Id: "RootService",
    Name: "Root Service",
    RedfishVersion: cisco ? "1.8.0" : "1.15.0",
    UUID: cisco ? "B16A1200-1CCF-42EA-8B33-6C4D50110704" : "92384634-2938-2342-8820-489239905423",
    ...(cisco ? { Product: "UCSC-C220-M5SX", Vendor: "Cisco Systems Inc." } : {}),
    Systems: ref(`${v1}/Systems`),
    Chassis: ref(`${v1}/Chassis`),
    Managers: ref(`${v1}/Managers`),
    SessionService: ref(`${v1}/SessionService`),
    AccountService: ref(`${v1}/AccountService`),
    ...(opts.updateService ? { UpdateService: ref(`${v1}/UpdateService`) } : {}),
    Links: { Sessions: ref(`${v1}/SessionService/Sessions`) },
  };
  t.set(v1, root);

  // Computer system and its processors.
  put(collection(`${v1}/Systems`, "ComputerSystemCollection", "Computer System Collection", [sys]));
  put({
    "@odata.id": sys,
    "@odata.type": cisco ? "#ComputerSystem.v1_9_0.ComputerSystem" : "#ComputerSystem.v1_20_0.ComputerSystem",
    Id: ids.system,
    Name: cisco ? "UCS C220 M5SX" : "WebFrontEnd483",
    SystemType: "Physical",
    Manufacturer: cisco ? "Cisco Systems Inc" : "Contoso",
    Model: cisco ? "UCSC-C220-M5SX" : "3500RX",
    SerialNumber: ids.system,
    AssetTag: cisco ? "029056F" : "Chicago-45Z-2381",
    HostName: cisco ? "lab-c220-WZP22490ZCU" : "web483",
    BiosVersion: state.biosVersion,
    PowerState: state.powerState,
    IndicatorLED: "Off",
    UUID: cisco ? "B16A1200-1CCF-42EA-8B33-6C4D50110704" : "38947555-7742-3448-3784-823347823834",
    Status: { ...status, HealthRollup: state.health },
    ProcessorSummary: {
      Count: 2,
      Model: cisco
        ? "Intel(R) Xeon(R) Gold 6152 CPU @ 2.10GHz"
        : "Multi-Core Intel(R) Xeon(R) processor 7xxx Series",
    },
    MemorySummary: { TotalSystemMemoryGiB: cisco ? 256 : 96, Status: { Health: "OK", HealthRollup: "OK" } },
    Processors: ref(`${sys}/Processors`),
    Links: { Chassis: [ref(ch)], ManagedBy: [ref(mgr)] },
  });
  const cpus = ["CPU1", "CPU2"];
  put(
    collection(
      `${sys}/Processors`,
      "ProcessorCollection",
      "Processors Collection",
      cpus.map((c) => `${sys}/Processors/${c}`),
    ),
  );
  for (const c of cpus) {
    const withMetrics = opts.cpuSource === "processor-metrics" && c === "CPU1";
    put({
      "@odata.id": `${sys}/Processors/${c}`,
      "@odata.type": "#Processor.v1_7_0.Processor",
      Id: c,
      Name: "Processor",
      Socket: c,
      ProcessorType: "CPU",
      ProcessorArchitecture: "x86",
      InstructionSet: "x86-64",
      Manufacturer: "Intel(R) Corporation",
      Model: cisco
        ? "Intel(R) Xeon(R) Gold 6152 CPU @ 2.10GHz"
        : "Multi-Core Intel(R) Xeon(R) processor 7xxx Series",
      TotalCores: 22,
      TotalThreads: 44,
      Status: { State: "Enabled", Health: "OK" },
      ...(withMetrics ? { Metrics: ref(`${sys}/Processors/${c}/ProcessorMetrics`) } : {}),
    });
  }
  if (opts.cpuSource === "processor-metrics") {
    put({
      "@odata.id": `${sys}/Processors/CPU1/ProcessorMetrics`,
      "@odata.type": "#ProcessorMetrics.v1_4_0.ProcessorMetrics",
      Id: "ProcessorMetrics",
      Name: "Metrics for CPU1",
      BandwidthPercent: state.hostCpu.kernelPercent + state.hostCpu.userPercent,
      KernelPercent: state.hostCpu.kernelPercent,
      UserPercent: state.hostCpu.userPercent,
      TemperatureCelsius: state.cpuTempCelsius,
    });
  }

  // Manager, its network protocols (NTP) and interfaces.
  put(collection(`${v1}/Managers`, "ManagerCollection", "Manager Collection", [mgr]));
  put({
    "@odata.id": mgr,
    "@odata.type": cisco ? "#Manager.v1_5_0.Manager" : "#Manager.v1_19_0.Manager",
    Id: ids.manager,
    Name: cisco ? "Cisco Integrated Management Controller" : "Manager",
    Description: cisco ? "Cisco Integrated Management Controller" : "Contoso BMC",
    ManagerType: "BMC",
    Model: cisco ? "UCSC-C220-M5SX" : "Joo Janta 200",
    FirmwareVersion: state.bmcFirmwareVersion,
    DateTime: "2026-11-21T10:14:35+01:00",
    DateTimeLocalOffset: "+01:00",
    UUID: cisco ? "B16A1200-1CCF-42EA-8B33-6C4D50110704" : "58893887-8974-2487-2389-841168418919",
    Status: status,
    NetworkProtocol: ref(`${mgr}/NetworkProtocol`),
    EthernetInterfaces: ref(`${mgr}/EthernetInterfaces`),
    ...(opts.cpuSource === "manager-diagnostics"
      ? { ManagerDiagnosticData: ref(`${mgr}/ManagerDiagnosticData`) }
      : {}),
    Links: { ManagerForServers: [ref(sys)], ManagerForChassis: [ref(ch)], ManagerInChassis: ref(ch) },
  });
  put({
    "@odata.id": `${mgr}/NetworkProtocol`,
    "@odata.type": cisco
      ? "#ManagerNetworkProtocol.v1_5_0.ManagerNetworkProtocol"
      : "#ManagerNetworkProtocol.v1_11_0.ManagerNetworkProtocol",
    Id: cisco ? "ManagerNetworkProtocol" : "NetworkProtocol",
    Name: "Manager Network Protocol",
    Description: "Manager Network Service",
    HostName: cisco ? "lab-c220-WZP22490ZCU" : "web483-bmc",
    HTTP: { Port: 80, ProtocolEnabled: true },
    HTTPS: { Port: 443, ProtocolEnabled: true },
    IPMI: { Port: 623, ProtocolEnabled: false },
    SSH: { Port: 22, ProtocolEnabled: true },
    KVMIP: { Port: cisco ? 2068 : 5288, ProtocolEnabled: true },
    ...(state.ntpServers === null
      ? {}
      : { NTP: { NTPServers: [...state.ntpServers], Port: 123, ProtocolEnabled: state.ntpEnabled } }),
  });
  put(
    collection(`${mgr}/EthernetInterfaces`, "EthernetInterfaceCollection", "Ethernet Interfaces Collection", [
      `${mgr}/EthernetInterfaces/${cisco ? "NICs" : "eth0"}`,
    ]),
  );
  put({
    "@odata.id": `${mgr}/EthernetInterfaces/${cisco ? "NICs" : "eth0"}`,
    "@odata.type": "#EthernetInterface.v1_4_1.EthernetInterface",
    Id: cisco ? "NICs" : "eth0",
    Name: "Manager Ethernet Interface",
    MACAddress: "70:EA:1A:00:C9:9C",
    IPv4Addresses: [{
      Address: "192.0.2.41",
      AddressOrigin: "Static",
      Gateway: "192.0.2.62",
      SubnetMask: "255.255.255.224",
    }],
    DHCPv4: { DHCPEnabled: false, UseNTPServers: false },
  });
  if (opts.cpuSource === "manager-diagnostics") {
    put({
      "@odata.id": `${mgr}/ManagerDiagnosticData`,
      "@odata.type": "#ManagerDiagnosticData.v1_2_3.ManagerDiagnosticData",
      Id: "ManagerDiagnosticData",
      Name: "Manager Diagnostic Data",
      ProcessorStatistics: {
        KernelPercent: state.bmcCpu.kernelPercent,
        UserPercent: state.bmcCpu.userPercent,
      },
      MemoryStatistics: { TotalBytes: 1013052000, UsedBytes: 45084000, FreeBytes: 894820000 },
    });
  }

  // Chassis with Thermal and Power (deprecated in newer schemas but what Cisco IMC 4.x serves).
  put(collection(`${v1}/Chassis`, "ChassisCollection", "Chassis Collection", [ch]));
  put({
    "@odata.id": ch,
    "@odata.type": cisco ? "#Chassis.v1_10_0.Chassis" : "#Chassis.v1_26_0.Chassis",
    Id: ids.chassis,
    Name: "Computer System Chassis",
    ChassisType: "RackMount",
    Manufacturer: cisco ? "Cisco Systems Inc" : "Contoso",
    Model: cisco ? "UCSC-C220-M5SX" : "3500RX",
    SerialNumber: ids.system,
    PartNumber: cisco ? "68-5960-04" : "224071-J23",
    PowerState: state.powerState,
    Status: status,
    ...(opts.thermalPower ? { Thermal: ref(`${ch}/Thermal`), Power: ref(`${ch}/Power`) } : {}),
    ...(cisco
      ? {}
      : { ThermalSubsystem: ref(`${ch}/ThermalSubsystem`), PowerSubsystem: ref(`${ch}/PowerSubsystem`) }),
    Links: { ComputerSystems: [ref(sys)], ManagedBy: [ref(mgr)] },
  });
  if (opts.thermalPower) {
    put({
      "@odata.id": `${ch}/Thermal`,
      "@odata.type": "#Thermal.v1_4_0.Thermal",
      Id: "Thermal",
      Name: "Thermal",
      Status: status,
      Temperatures: [
        {
          "@odata.id": `${ch}/Thermal#/Temperatures/0`,
          MemberId: "0",
          Name: cisco ? "FP_TEMP_SENSOR" : "Intake Temp",
          PhysicalContext: "Intake",
          ReadingCelsius: state.inletTempCelsius,
          UpperThresholdCritical: 40,
          Status: { State: "Enabled", Health: state.inletTempCelsius >= 40 ? "Critical" : "OK" },
        },
        {
          "@odata.id": `${ch}/Thermal#/Temperatures/1`,
          MemberId: "1",
          Name: cisco ? "P1_TEMP_SENS" : "CPU1 Temp",
          PhysicalContext: "CPU",
          ReadingCelsius: state.cpuTempCelsius,
          UpperThresholdCritical: 90,
          Status: { State: "Enabled", Health: "OK" },
        },
      ],
      Fans: [
        {
          "@odata.id": `${ch}/Thermal#/Fans/0`,
          MemberId: "0",
          Name: cisco ? "FAN1_TACH1" : "BaseBoard System Fan",
          PhysicalContext: "Backplane",
          Reading: state.fanRpm,
          ReadingUnits: "RPM",
          Status: { State: "Enabled", Health: "OK" },
        },
      ],
    });
    put({
      "@odata.id": `${ch}/Power`,
      "@odata.type": "#Power.v1_5_0.Power",
      Id: "Power",
      Name: "Power",
      PowerControl: [
        {
          "@odata.id": `${ch}/Power#/PowerControl/0`,
          MemberId: "0",
          Name: "Server Power Control",
          PowerConsumedWatts: state.powerConsumedWatts,
          PowerMetrics: {
            MinConsumedWatts: 172,
            AverageConsumedWatts: 268,
            MaxConsumedWatts: 366,
            IntervalInMin: 60,
          },
          PowerLimit: { LimitException: "NoAction" },
        },
      ],
      PowerSupplies: ["PSU1", "PSU2"].map((name, i) => ({
        "@odata.id": `${ch}/Power#/PowerSupplies/${i}`,
        MemberId: String(i),
        Name: name,
        PowerSupplyType: "AC",
        PowerCapacityWatts: 1050,
        LastPowerOutputWatts: Math.round(state.powerConsumedWatts / 2),
        Status: { State: "Enabled", Health: "OK" },
      })),
      Voltages: [
        {
          "@odata.id": `${ch}/Power#/Voltages/0`,
          MemberId: "0",
          Name: cisco ? "PSU1_VOUT" : "VRM1 Voltage",
          ReadingVolts: 12.1,
          UpperThresholdCritical: 14,
          Status: { State: "Enabled", Health: "OK" },
        },
      ],
    });
  }
  if (!cisco) {
    put({
      "@odata.id": `${ch}/ThermalSubsystem`,
      "@odata.type": "#ThermalSubsystem.v1_3_0.ThermalSubsystem",
      Id: "ThermalSubsystem",
      Name: "Thermal Subsystem",
      Status: status,
    });
    put({
      "@odata.id": `${ch}/PowerSubsystem`,
      "@odata.type": "#PowerSubsystem.v1_1_0.PowerSubsystem",
      Id: "PowerSubsystem",
      Name: "Power Subsystem",
      Status: status,
    });
  }

  // Firmware inventory.
  if (opts.updateService) {
    put({
      "@odata.id": `${v1}/UpdateService`,
      "@odata.type": "#UpdateService.v1_5_0.UpdateService",
      Id: "UpdateService",
      Name: "Update Service",
      ServiceEnabled: true,
      FirmwareInventory: ref(`${v1}/UpdateService/FirmwareInventory`),
    });
    const fw = ids.firmware.map((id) => `${v1}/UpdateService/FirmwareInventory/${id}`);
    put(
      collection(
        `${v1}/UpdateService/FirmwareInventory`,
        "SoftwareInventoryCollection",
        "Firmware Inventory",
        fw,
      ),
    );
    const versions: Record<string, string> = {
      CIMC: state.bmcFirmwareVersion,
      BMC: state.bmcFirmwareVersion,
      BIOS: state.biosVersion,
      Board_Controller: "59.0",
      "UCSC-RAID-M5-slot-MRAID": "51.10.0-3612",
      "X710DA4-slot-1": "0x80009E63-1.823.2",
      "X710DA4-slot-2": "0x80009E63-1.823.2",
      "X550-LOM-slot-L": "0x80001514-1.823.2",
    };
    const related: Record<string, string> = { CIMC: mgr, BMC: mgr, BIOS: sys };
    for (const id of ids.firmware) {
      put({
        "@odata.id": `${v1}/UpdateService/FirmwareInventory/${id}`,
        "@odata.type": "#SoftwareInventory.v1_2_1.SoftwareInventory",
        Id: id,
        Name: id,
        Version: versions[id],
        Updateable: true,
        ...(related[id] ? (cisco ? { RelatedItem: related[id] } : { RelatedItem: [ref(related[id])] }) : {}),
      });
    }
  }

  // Session service.
  put({
    "@odata.id": `${v1}/SessionService`,
    "@odata.type": "#SessionService.v1_1_6.SessionService",
    Id: "SessionService",
    Name: "Session Service",
    ServiceEnabled: true,
    SessionTimeout: state.sessionTimeoutSeconds,
    Sessions: ref(`${v1}/SessionService/Sessions`),
  });
  const sessPaths = sessions.map((s) => `${v1}/SessionService/Sessions/${s.id}`);
  put(collection(`${v1}/SessionService/Sessions`, "SessionCollection", "Session Collection", sessPaths));
  for (const s of sessions) put(sessionResource(s.id, s.user));
  return t;
}

export function sessionResource(id: string, user: string): Resource {
  return {
    "@odata.id": `/redfish/v1/SessionService/Sessions/${id}`,
    "@odata.type": "#Session.v1_1_6.Session",
    Id: id,
    Name: "User Session",
    Description: "User Session",
    UserName: user,
    Password: null,
  };
}

/** Base registry messages the simulator answers with (DMTF Base registry wording). */
export const MESSAGES: Record<string, { message: string; severity: string; resolution: string }> = {
  NoValidSession: {
    message: "There is no valid session established with the implementation.",
    severity: "Critical",
    resolution: "Establish a session before attempting any operations.",
  },
  SessionLimitExceeded: {
    message:
      "The session establishment failed due to the number of simultaneous sessions exceeding the limit of the implementation.",
    severity: "Critical",
    resolution:
      "Reduce the number of other sessions before trying to establish the session or increase the limit of simultaneous sessions (if supported).",
  },
  InsufficientPrivilege: {
    message:
      "There are insufficient privileges for the account or credentials associated with the current session to perform the requested operation.",
    severity: "Critical",
    resolution:
      "Either abandon the operation or change the associated access rights and resubmit the request if the operation failed.",
  },
  ResourceMissingAtURI: {
    message: "The resource at the URI '%1' was not found.",
    severity: "Critical",
    resolution: "Place a valid resource at the URI or correct the URI and resubmit the request.",
  },
  InternalError: {
    message: "The request failed due to an internal service error.  The service is still operational.",
    severity: "Critical",
    resolution: "Resubmit the request.  If the problem persists, consider resetting the service.",
  },
  PropertyMissing: {
    message: "The property %1 is a required property and must be included in the request.",
    severity: "Warning",
    resolution:
      "Ensure that the property is in the request body and has a valid value and resubmit the request.",
  },
  OperationNotAllowed: {
    message: "The HTTP method is not allowed on this resource.",
    severity: "Critical",
    resolution: "None.",
  },
};
