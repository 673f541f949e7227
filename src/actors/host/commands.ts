/** The commands a host actor takes (docs/protocol.md, Routes), already validated. */

/** Record the host's health and draining flags. */
export interface SetHost {
  readonly op: "set";
  readonly healthy: boolean;
  readonly draining: boolean;
}

/** Any host command. */
export type HostCommand = SetHost;
