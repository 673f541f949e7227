/**
 * Scrapes `/metrics` as Prometheus would and reads it with a Prometheus text
 * parser, so the tests check the exposition itself, not prom-client's objects.
 */
import parsePrometheusTextFormat, { type Family, type Sample } from "parse-prometheus-text-format";

/** Every family of one scrape, by name. */
export class Scrape {
  constructor(
    readonly families: ReadonlyMap<string, Family>,
    /** The same scrape with histograms read as plain series (`_bucket`, `_count`, `_sum`), see {@link scrape}. */
    private readonly flat: ReadonlyMap<string, Family>,
  ) {}

  /** The family `name` (throws when the scrape has none: a missing series is a failure). */
  family(name: string): Family {
    const f = this.families.get(name);
    if (f === undefined) throw new Error(`no ${name} in the scrape`);
    return f;
  }

  /** The sample of `name` whose labels include `labels`, or undefined. */
  sample(name: string, labels: Readonly<Record<string, string>> = {}): Sample | undefined {
    return this.family(name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  }

  /** The value of a counter or gauge sample (0 when the labelled sample is absent). */
  value(name: string, labels: Readonly<Record<string, string>> = {}): number {
    const s = this.sample(name, labels);
    return s === undefined ? 0 : Number(s.value);
  }

  /** The observation count of a histogram (its `_count` series with `labels`; 0 when absent). */
  count(name: string, labels: Readonly<Record<string, string>> = {}): number {
    if (this.family(name).type !== "HISTOGRAM") throw new Error(`${name} is not a histogram`);
    const s = this.flat.get(`${name}_count`)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
    return s === undefined ? 0 : Number(s.value);
  }
}

/** GETs `<base>/metrics` and parses it. */
export async function scrape(base: string): Promise<Scrape> {
  const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5000) });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  if (!(res.headers.get("content-type") ?? "").startsWith("text/plain"))
    throw new Error(`/metrics content type ${res.headers.get("content-type")}`);
  const text = await res.text();
  // A name the parser meets again after another (a flattened histogram's series interleave) continues its family.
  const byName = (families: Family[]) => {
    const map = new Map<string, Family>();
    for (const f of families) {
      const seen = map.get(f.name);
      map.set(f.name, seen === undefined ? f : { ...seen, metrics: [...seen.metrics, ...f.metrics] });
    }
    return map;
  };
  // The parser folds a histogram with labels besides `le` into one sample and
  // drops its labels, count and sum; read without the TYPE line, each of its
  // series is an ordinary labelled family.
  const flat = text.replace(/^# TYPE \S+ histogram$/gm, "");
  return new Scrape(byName(parsePrometheusTextFormat(text)), byName(parsePrometheusTextFormat(flat)));
}

/** The status of GET `<base><path>`. */
export async function status(base: string, path: string): Promise<number> {
  const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(5000) });
  await res.arrayBuffer();
  return res.status;
}
