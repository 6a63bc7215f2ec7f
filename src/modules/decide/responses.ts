import { toFlagValue } from '../../core/flags/evaluate-flags';
import type { FlagResult } from '../../core/flags/types';
import type { Project } from '../../storage';
import type { FlagsOutcome } from './evaluate';
import { sharedLists, sharedResults } from './result-memo';

/**
 * Response bodies of `/decide/`, `/flags/` and remote config, in PostHog's shapes. Features this
 * server does not ingest (session recordings, surveys, heatmaps, site apps, exception
 * autocapture) are always reported off, so posthog-js never starts them.
 */

type Json = Record<string, unknown>;

/** posthog-js switches to gzip only for `gzip-js`; the spec lists `lz64`, which capture also reads. */
const DECIDE_COMPRESSION = ['gzip', 'gzip-js', 'lz64'];
const REMOTE_COMPRESSION = ['gzip', 'gzip-js'];

const capturePerformance = (project: Project) =>
  project.settings.capture_performance_opt_in ? { network_timing: true, web_vitals: false, web_vitals_allowed_metrics: null } : false;

/** What every `/decide/` answer starts with (Django `get_base_config`, plus the spec's `editorParams`). */
export const decideBaseConfig = (project: Project | null, requestId?: string): Json => ({
  config: { enable_collect_everything: true },
  editorParams: {},
  toolbarParams: {},
  isAuthenticated: false,
  supportedCompression: DECIDE_COMPRESSION,
  sessionRecording: false,
  ...(project && {
    captureDeadClicks: false,
    capturePerformance: capturePerformance(project),
    autocapture_opt_out: false,
    autocaptureExceptions: false,
    elementsChainAsString: true,
    surveys: false,
    heatmaps: false,
    flagsPersistenceDefault: false,
    defaultIdentifiedOnly: true,
    siteApps: [],
  }),
  ...(requestId && { requestId }),
});

/** `GET /array/<token>/config` (PostHog `RemoteConfig.build_config`, public fields only). */
export const remoteConfig = (project: Project, hasFeatureFlags: boolean): Json => ({
  token: project.apiToken,
  supportedCompression: REMOTE_COMPRESSION,
  hasFeatureFlags,
  captureDeadClicks: false,
  capturePerformance: capturePerformance(project),
  autocapture_opt_out: false,
  autocaptureExceptions: false,
  elementsChainAsString: true,
  errorTracking: { autocaptureExceptions: false, suppressionRules: [] },
  sessionRecording: false,
  heatmaps: false,
  surveys: false,
  defaultIdentifiedOnly: true,
  siteApps: [],
});

/** `/array/<token>/config.js`: what posthog-js loads as a script before anything else. */
export function remoteConfigScript(project: Project, hasFeatureFlags: boolean): string {
  const { siteApps: _siteApps, ...config } = remoteConfig(project, hasFeatureFlags);
  const token = JSON.stringify(project.apiToken);
  return `(function() {
  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {};
  window._POSTHOG_REMOTE_CONFIG[${token}] = {
    config: ${JSON.stringify(config)},
    siteApps: []
  }
})();`;
}

/** One flag as `/flags?v=2` and `/decide/?v=4` report it. */
function flagDetails(result: FlagResult, outcome: FlagsOutcome) {
  const flag = outcome.flags.get(result.key);
  return {
    key: result.key,
    enabled: result.enabled,
    variant: result.variant,
    reason: result.reason,
    metadata: { id: flag?.id ?? 0, version: flag?.version ?? 0, description: null, payload: result.payload },
  };
}

/**
 * Bodies are assembled from JSON text. Results shared between requests (see result-memo) are
 * serialized once, and so is a remembered list that is a whole answer; what changes per request
 * (`requestId`, `evaluatedAt`) goes first, so a check mostly concatenates text it already has.
 */
const fragments = new WeakMap<FlagResult, { details?: string; value?: string }>();

function fragment(result: FlagResult, kind: 'details' | 'value', make: () => unknown): string {
  const shared = sharedResults.has(result);
  const cached = shared ? fragments.get(result) : undefined;
  const hit = cached?.[kind];
  if (hit !== undefined) return hit;
  // One JSON.stringify makes one flat string (`"key":value`), so joining fragments copies text
  // instead of walking a concatenation tree each time.
  const text = JSON.stringify({ [result.key]: make() }).slice(1, -1);
  if (shared) fragments.set(result, { ...cached, [kind]: text });
  return text;
}

const listTexts = new WeakMap<readonly FlagResult[], Record<string, string>>();

function listText(results: readonly FlagResult[], kind: string, make: () => string): string {
  if (!sharedLists.has(results)) return make();
  let cached = listTexts.get(results);
  if (!cached) listTexts.set(results, (cached = {}));
  return (cached[kind] ??= make());
}

const objectText = (entries: string[]) => `{${entries.join(',')}}`;
const member = (name: string, text: string) => `${JSON.stringify(name)}:${text}`;
/** An object's members as text, without the braces. */
const membersText = (object: Json) => Object.entries(object).map(([name, value]) => member(name, JSON.stringify(value))).join(',');

const detailsText = (outcome: FlagsOutcome) => objectText(outcome.results.map((r) => fragment(r, 'details', () => flagDetails(r, outcome))));
const valuesText = (results: readonly FlagResult[]) => objectText(results.map((r) => fragment(r, 'value', () => toFlagValue(r))));

/** Payloads of enabled flags that have one, as stored (JSON text). */
const payloads = (outcome: FlagsOutcome) => {
  const out: Json = {};
  for (const result of outcome.results) if (result.enabled && result.payload !== null && result.payload !== undefined) out[result.key] = result.payload;
  return out;
};

/** Django `_format_feature_flags_response`: v1 list, v2 enabled map, v3 all + payloads, v4+ details. */
function decideFlagsText(version: number, outcome: FlagsOutcome): string {
  const errors = member('errorsWhileComputingFlags', String(outcome.errors));
  const enabled = () => outcome.results.filter((r) => r.enabled);
  if (version === 2) return member('featureFlags', valuesText(enabled()));
  if (version === 3) return [member('featureFlags', valuesText(outcome.results)), errors, member('featureFlagPayloads', JSON.stringify(payloads(outcome)))].join(',');
  if (version >= 4) return `${member('flags', detailsText(outcome))},${errors}`;
  return member('featureFlags', JSON.stringify(enabled().map((r) => r.key)));
}

/** Rust `/flags`: v ≥ 2 the detailed `flags` map; below, the legacy all-flags map with payloads. */
function flagsText(version: number, outcome: FlagsOutcome): string {
  const errors = member('errorsWhileComputingFlags', String(outcome.errors));
  if (version >= 2) return `${errors},${member('flags', detailsText(outcome))}`;
  return [errors, member('featureFlags', valuesText(outcome.results)), member('featureFlagPayloads', JSON.stringify(payloads(outcome)))].join(',');
}

const decideVersion = (version: number) => (version >= 4 ? 4 : version >= 1 && version <= 3 ? version : 1);

/** The decide base config of a project, serialized once per project snapshot. */
const baseTexts = new WeakMap<Project, string>();
function baseText(project: Project): string {
  let text = baseTexts.get(project);
  if (text === undefined) {
    text = membersText(decideBaseConfig(project));
    baseTexts.set(project, text);
  }
  return text;
}

const DECIDE_KINDS = ['decide-0', 'decide-1', 'decide-2', 'decide-3', 'decide-4'];

/** A `/decide/` answer: the project's base config, `requestId`, and the version's flag part. */
export function decideBody(project: Project, version: number, outcome: FlagsOutcome, requestId: string): string {
  const v = decideVersion(version);
  const flags = listText(outcome.results, DECIDE_KINDS[v], () => decideFlagsText(v, outcome));
  return `{"requestId":${JSON.stringify(requestId)},${baseText(project)},${flags}}`;
}

/** A `/flags/` answer, with the remote config members first when asked for. */
export function flagsBody(version: number, outcome: FlagsOutcome, requestId: string, evaluatedAt: number, config: Json | null = null): string {
  const v = version >= 2 ? 2 : 1;
  const flags = listText(outcome.results, v === 2 ? 'flags-2' : 'flags-1', () => flagsText(v, outcome));
  const head = `"requestId":${JSON.stringify(requestId)},"evaluatedAt":${evaluatedAt}`;
  return config ? `{${head},${membersText(config)},${flags}}` : `{${head},${flags}}`;
}

/** The config part `/flags?config=true` adds (Rust passes the remote config through). */
export const flagsConfig = (project: Project | null, hasFeatureFlags: boolean): Json => {
  const base: Json = {
    config: { enable_collect_everything: true },
    toolbarParams: {},
    isAuthenticated: false,
    supportedCompression: REMOTE_COMPRESSION,
    sessionRecording: false,
  };
  if (!project) return base;
  const { token: _token, ...config } = remoteConfig(project, hasFeatureFlags);
  return { ...config, ...base };
};

/** Django's `int(v)`: absent or empty is 1; anything that is not an integer is 2. */
export function parseDecideVersion(v: string | null): number {
  if (v === null || v === '') return 1;
  return /^\s*[+-]?\d+\s*$/.test(v) ? Number.parseInt(v, 10) : 2;
}

/** Rust `/flags`: a version that is not an integer reads as 1; no `v` and no `config` means v2 with config. */
export function parseFlagsQuery(query: URLSearchParams): { version: number; config: boolean } {
  const v = query.get('v') || query.get('version');
  const config = query.get('config');
  if (!v && config === null) return { version: 2, config: true };
  const version = v && /^\s*[+-]?\d+\s*$/.test(v) ? Number.parseInt(v, 10) : 1;
  return { version, config: config !== null && /^(true|1|yes)$/i.test(config) };
}
