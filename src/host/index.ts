/** What other kinds may use of hosts: a route is placed on a host, admitted under its cap, ordered by its load. */
export type { AdmitLease } from "./commands.ts";
export { hostEndpoints } from "./endpoints.ts";
export { HostLoadOrder, type LoadedHost } from "./load-order.ts";
export { HostLoads } from "./loads.ts";
export { hostLogic } from "./logic.ts";
export type { HostHealth, HostState } from "./state.ts";
export { HostTable } from "./table.ts";
