/** Types of parse-prometheus-text-format (the package ships none). */
declare module "parse-prometheus-text-format" {
  /** One sample of a counter, gauge or untyped family; a histogram's carries buckets, count and sum instead of a value. */
  export interface Sample {
    readonly value?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly buckets?: Readonly<Record<string, string>>;
    readonly count?: string;
    readonly sum?: string;
  }
  /** One metric family. */
  export interface Family {
    readonly name: string;
    readonly help: string;
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    readonly metrics: readonly Sample[];
  }
  /** Parses Prometheus text exposition. */
  export default function parsePrometheusTextFormat(text: string): Family[];
}
