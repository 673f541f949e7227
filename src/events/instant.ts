/**
 * Epoch milliseconds of an instant as the events write it, at a fraction of
 * `Date.parse`'s cost. Folding a history parses every event's `at` (and its
 * expiries) several times over: in the schema check, the fold and the
 * audit; `Date.parse` is most of a microsecond of that per event.
 *
 * Only the canonical form `Date.prototype.toISOString()` writes
 * (`YYYY-MM-DDTHH:MM:SS.sssZ`, years 0000–9999) with a day up to 28 and an
 * hour up to 23 is read here; anything else (the 29th–31st, other forms,
 * garbage) goes to `Date.parse`, so the answer is always `Date.parse`'s
 * (test/events/instant.unit.test.ts checks that over generated strings).
 */

/** An RFC 3339 UTC instant as the events accept it: ends in `Z` and parses (the `instant` field schema's refinement). */
export function isUtcInstant(s: string): boolean {
  return s.endsWith("Z") && !Number.isNaN(instantMs(s));
}

/** The last instant read and its value: one event's `at` is read by the schema check, the fold and the audit in turn. */
let lastText = "";
let lastMs = Number.NaN;

/** `Date.parse(s)`, computed directly when `s` is a canonical instant. */
export function instantMs(s: string): number {
  if (s === lastText) return lastMs;
  const ms = readInstant(s);
  lastText = s;
  lastMs = ms;
  return ms;
}

function readInstant(s: string): number {
  if (s.length !== 24 || s.charCodeAt(23) !== 90 /* Z */) return Date.parse(s);
  const year = fourDigits(s, 0);
  const month = twoDigits(s, 5);
  const day = twoDigits(s, 8);
  const hour = twoDigits(s, 11);
  const minute = twoDigits(s, 14);
  const second = twoDigits(s, 17);
  const milli = twoDigits(s, 20) * 10 + digit(s, 22);
  if (
    s.charCodeAt(4) !== 45 /* - */ ||
    s.charCodeAt(7) !== 45 ||
    s.charCodeAt(10) !== 84 /* T */ ||
    s.charCodeAt(13) !== 58 /* : */ ||
    s.charCodeAt(16) !== 58 ||
    s.charCodeAt(19) !== 46 /* . */ ||
    !(
      year >= 0 &&
      month >= 1 &&
      month <= 12 &&
      day >= 1 &&
      day <= 28 &&
      hour >= 0 &&
      hour <= 23 &&
      minute >= 0 &&
      minute <= 59 &&
      second >= 0 &&
      second <= 59 &&
      milli >= 0
    )
  ) {
    return Date.parse(s);
  }
  return ((daysSinceEpoch(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milli;
}

/** The digit at `i`, or a large negative number when it is not one (so every sum it joins is negative). */
function digit(s: string, i: number): number {
  const d = s.charCodeAt(i) - 48;
  return d >= 0 && d <= 9 ? d : -1e6;
}

function twoDigits(s: string, i: number): number {
  return digit(s, i) * 10 + digit(s, i + 1);
}

function fourDigits(s: string, i: number): number {
  return twoDigits(s, i) * 100 + twoDigits(s, i + 2);
}

/** Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's days_from_civil). */
function daysSinceEpoch(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
