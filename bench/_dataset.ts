import { PATHS, randomKit, seeded, webProperties } from './_events';

/**
 * The headline's generated events for the events list and the exports: ~1 KB posthog-js web
 * events of a month ending an hour ago, in time order (so each ~1 MB `/batch/` body covers
 * minutes, as live traffic does, and a load writes one or two days' files), with client uuids
 * (a retried body is never stored twice), from a pool of users; seeded, so every run sends
 * the same events.
 */

const DAY = 86_400_000;
const EVENTS = ['$pageview', '$pageview', '$pageview', '$pageview', '$autocapture', '$autocapture', '$pageleave', 'clicked_button', 'signed_up', 'purchase'];

export interface DatasetBody {
  body: Buffer;
  events: number;
}

export interface Dataset {
  /** The distinct id whose events the "a person's events" case lists. */
  person: string;
  /** ~1 MB `/batch/` bodies, generated as they are taken. */
  bodies(): Generator<DatasetBody>;
}

export function createDataset(total: number, token: string, options: { seed?: number; endMs?: number; batchBytes?: number } = {}): Dataset {
  const kit = randomKit(seeded(options.seed ?? 2026));
  const { rand, pick, hex, uuid7 } = kit;
  const endMs = options.endMs ?? Date.now() - 3_600_000;
  const span = 30 * DAY;
  const step = span / total;
  const users = Array.from({ length: Math.max(10, Math.min(50_000, Math.round(total / 20))) }, (_, i) => ({ id: `user-${i}-${hex(8)}`, device: uuid7(endMs - span - Math.floor(rand() * span)) }));
  const sessions = Array.from({ length: 2000 }, () => uuid7(endMs - Math.floor(rand() * span)));
  const batchBytes = options.batchBytes ?? 1_000_000;
  const person = users[Math.min(123, users.length - 1)].id;

  function event(i: number) {
    const ts = Math.floor(endMs - span + i * step + rand() * step);
    const user = pick(users);
    const properties = webProperties(kit, { ts, distinctId: user.id, deviceId: user.device, sessionId: pick(sessions), path: pick(PATHS) });
    if (rand() < 0.03) properties.$set = { plan: properties.plan, last_seen_path: properties.$pathname };
    return { uuid: uuid7(ts), event: pick(EVENTS), distinct_id: user.id, properties, timestamp: new Date(ts).toISOString() };
  }

  return {
    person,
    *bodies() {
      let i = 0;
      const prefix = `{"api_key":${JSON.stringify(token)},"batch":[`;
      while (i < total) {
        const parts: string[] = [];
        let bytes = prefix.length;
        while (i < total && bytes < batchBytes) {
          const json = JSON.stringify(event(i++));
          parts.push(json);
          bytes += json.length + 1;
        }
        yield { body: Buffer.from(`${prefix}${parts.join(',')}]}`), events: parts.length };
      }
    },
  };
}
