/**
 * The names of the route choosers (docs/protocol.md, Routes): what
 * `--route-chooser` takes and what `RouteLeasePlaced` data names in
 * `chooser`. The choosers themselves are in src/route/chooser.ts.
 */

/** Every chooser's name; the first is the default. */
export const ROUTE_CHOOSER_NAMES = ["least-loaded", "rendezvous", "least-load", "bounded-hash"] as const;

/** One of {@link ROUTE_CHOOSER_NAMES}. */
export type RouteChooserName = (typeof ROUTE_CHOOSER_NAMES)[number];
