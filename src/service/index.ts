/** Assembly of one service instance: the runtime, every kind's module, the endpoints and the durable commands. */
export * from "./start-service.ts";
export * from "./kind-module.ts";
export * from "./lock-module.ts";
export * from "./proxy-module.ts";
export * from "./route-module.ts";
