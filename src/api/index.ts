/** The wire contract of docs/protocol.md: request schemas, endpoints, error mapping, the service framework. */
export * from "./errors.ts";
export * from "./validation.ts";
export * from "./micro-service.ts";
export * from "./command-endpoint.ts";
export * from "./lock-requests.ts";
export * from "./lock-endpoints.ts";
export * from "./host-requests.ts";
export * from "./host-endpoints.ts";
export * from "./route-requests.ts";
export * from "./route-endpoints.ts";
export * from "./proxy-requests.ts";
export * from "./proxy-endpoints.ts";
