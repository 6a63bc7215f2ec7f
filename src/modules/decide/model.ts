import { t } from 'elysia';
import { ErrorBody } from '../../http/schemas';

/** Wire shapes of the public flag endpoints, for the OpenAPI document (handlers answer with raw JSON). */

const FlagValue = t.Union([t.Boolean(), t.String()]);

const FlagReason = t.Object({
  code: t.String(),
  condition_index: t.Union([t.Integer(), t.Null()]),
  description: t.String(),
});

export const FlagDetails = t.Object({
  key: t.String(),
  enabled: t.Boolean(),
  variant: t.Union([t.String(), t.Null()]),
  reason: FlagReason,
  metadata: t.Object({
    id: t.Integer(),
    version: t.Integer(),
    description: t.Null(),
    payload: t.Unknown({ description: 'The stored payload (JSON text) of an enabled flag, else null.' }),
  }),
});

const BaseConfig = {
  config: t.Object({ enable_collect_everything: t.Boolean() }),
  editorParams: t.Record(t.String(), t.Unknown()),
  toolbarParams: t.Record(t.String(), t.Unknown()),
  isAuthenticated: t.Boolean(),
  supportedCompression: t.Array(t.String()),
  sessionRecording: t.Union([t.Boolean(), t.Record(t.String(), t.Unknown())]),
};

export const DecideResponse = t.Object(
  {
    ...BaseConfig,
    featureFlags: t.Optional(t.Union([t.Array(t.String()), t.Record(t.String(), FlagValue)])),
    featureFlagPayloads: t.Optional(t.Record(t.String(), t.Unknown())),
    flags: t.Optional(t.Record(t.String(), FlagDetails)),
    errorsWhileComputingFlags: t.Optional(t.Boolean()),
    requestId: t.Optional(t.String()),
  },
  {
    additionalProperties: true,
    description:
      'v1 (or no v): `featureFlags` lists enabled keys. v2: `featureFlags` maps enabled keys to true or the variant. ' +
      'v3: every flag incl. false, `featureFlagPayloads`, `errorsWhileComputingFlags`. v4+: `flags` with reasons and metadata.',
  },
);

export const FlagsResponse = t.Object(
  {
    errorsWhileComputingFlags: t.Boolean(),
    flags: t.Optional(t.Record(t.String(), FlagDetails)),
    featureFlags: t.Optional(t.Record(t.String(), FlagValue)),
    featureFlagPayloads: t.Optional(t.Record(t.String(), t.Unknown())),
    quotaLimited: t.Optional(t.Array(t.String())),
    requestId: t.String(),
    evaluatedAt: t.Integer(),
  },
  { additionalProperties: true, description: 'v ≥ 2: `flags`. v = 1: `featureFlags` + `featureFlagPayloads`. `config=true` adds the remote config.' },
);

export const RemoteConfigResponse = t.Object(
  {
    token: t.String(),
    supportedCompression: t.Array(t.String()),
    hasFeatureFlags: t.Boolean(),
    autocapture_opt_out: t.Boolean(),
    elementsChainAsString: t.Boolean(),
    sessionRecording: t.Union([t.Boolean(), t.Record(t.String(), t.Unknown())]),
    siteApps: t.Array(t.Unknown()),
  },
  { additionalProperties: true },
);

export const TokenParams = t.Object({ token: t.String() });

export const PublicErrors = { 400: ErrorBody, 401: ErrorBody, 413: ErrorBody };
