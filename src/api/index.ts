/** The wire contract of PROTOCOL.md: request schemas, endpoints, error mapping, the service framework. */
export * from "./errors.ts";
export * from "./validation.ts";
export * from "./micro-service.ts";
export * from "./command-endpoint.ts";
export * from "./lock-requests.ts";
export * from "./lock-endpoints.ts";
