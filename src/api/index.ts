/** The wire side of the contract: request schemas, the endpoint table, replies, the service framework, durable commands. */
export * from "./validation.ts";
export * from "./contract-conformance.ts";
export * from "./endpoint.ts";
export * from "./endpoints.ts";
export * from "./replies.ts";
export * from "./micro-service.ts";
export * from "./command-consumer.ts";
export * from "./lock-requests.ts";
export * from "./host-requests.ts";
export * from "./route-requests.ts";
export * from "./proxy-requests.ts";
export * from "./serve-endpoint.ts";
export * from "./reply-confinement.ts";
