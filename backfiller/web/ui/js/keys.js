// The key of any partition inside a folded status range.
//
// `partitionStatusRanges` names only the first and last key of each range. To name a partition
// in the middle (hover, click), we step from the first key: by calendar arithmetic for time
// partitions, or through the job's key list for static and dynamic ones. Every answer is checked:
// stepping `count - 1` times from the first key must land exactly on the range's last key, or
// the key is reported as unknown (null) rather than guessed.

const DIRECTIVES = {
  Y: { pattern: "(\\d{4})", field: "year" },
  m: { pattern: "(\\d{2})", field: "month" },
  d: { pattern: "(\\d{2})", field: "day" },
  H: { pattern: "(\\d{2})", field: "hour" },
  M: { pattern: "(\\d{2})", field: "minute" },
};

const UTC_ZONES = new Set(["UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z"]);

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A parser and a formatter for a strftime format made of %Y %m %d %H %M and literals. */
export function compileFormat(format) {
  let pattern = "";
  const fields = [];
  const pieces = [];
  for (let i = 0; i < format.length; i++) {
    const ch = format[i];
    if (ch === "%") {
      const directive = DIRECTIVES[format[i + 1]];
      if (!directive) return null;
      pattern += directive.pattern;
      fields.push(directive.field);
      pieces.push({ field: directive.field });
      i++;
    } else {
      pattern += escapeRegExp(ch);
      pieces.push({ literal: ch });
    }
  }
  const regex = new RegExp(`^${pattern}$`);
  const pad = (n, width) => String(n).padStart(width, "0");
  return {
    parse(text) {
      const m = regex.exec(text);
      if (!m) return null;
      const parts = { year: 1970, month: 1, day: 1, hour: 0, minute: 0 };
      fields.forEach((field, index) => {
        parts[field] = Number(m[index + 1]);
      });
      return Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute);
    },
    format(ms) {
      const d = new Date(ms);
      const values = {
        year: pad(d.getUTCFullYear(), 4),
        month: pad(d.getUTCMonth() + 1, 2),
        day: pad(d.getUTCDate(), 2),
        hour: pad(d.getUTCHours(), 2),
        minute: pad(d.getUTCMinutes(), 2),
      };
      return pieces.map((p) => (p.literal !== undefined ? p.literal : values[p.field])).join("");
    },
  };
}

function stepper(cadence) {
  const HOUR = 3600e3;
  switch (cadence) {
    case "hourly":
      return (ms, n) => ms + n * HOUR;
    case "daily":
      return (ms, n) => ms + n * 24 * HOUR;
    case "weekly":
      return (ms, n) => ms + n * 7 * 24 * HOUR;
    case "monthly":
      return (ms, n) => {
        const d = new Date(ms);
        return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes());
      };
    default:
      return null;
  }
}

/** Key at `offset` in a range of consecutive time partitions, or null when not provable. */
function timeKey(definition, range, offset) {
  if (!definition.keyFormat || !definition.cadence) return null;
  if (definition.cadence === "hourly" && !UTC_ZONES.has(definition.timezone || "UTC")) return null;
  const codec = compileFormat(definition.keyFormat);
  const step = stepper(definition.cadence);
  if (!codec || !step) return null;
  const first = codec.parse(range.startKey);
  if (first === null) return null;
  for (const direction of [1, -1]) {
    if (codec.format(step(first, direction * (range.count - 1))) === range.endKey) {
      return codec.format(step(first, direction * offset));
    }
  }
  return null;
}

/**
 * A function (range, index) => Promise<string|null> giving the key of the partition at `index`
 * (an absolute position) inside `range`.
 *
 * @param definition the job's PartitionsDefinition (kind, cadence, keyFormat, timezone)
 * @param loadKeys async () => string[] | null: the job's keys, for static and dynamic jobs
 */
export function keyResolver(definition, loadKeys) {
  let keyIndex = null;
  return async (range, index) => {
    const offset = index - range.startIndex;
    if (offset < 0 || offset >= range.count) return null;
    if (offset === 0) return range.startKey || null;
    if (offset === range.count - 1) return range.endKey || null;
    if (!definition) return null;
    if (definition.kind === "TIME") return timeKey(definition, range, offset);
    if (!keyIndex) {
      const keys = await loadKeys();
      if (!keys) return null;
      keyIndex = { keys, position: new Map(keys.map((k, i) => [k, i])) };
    }
    const a = keyIndex.position.get(range.startKey);
    const b = keyIndex.position.get(range.endKey);
    if (a === undefined || b === undefined) return null;
    if (b - a + 1 === range.count) return keyIndex.keys[a + offset];
    if (a - b + 1 === range.count) return keyIndex.keys[a - offset];
    return null;
  };
}
