import { Elysia } from 'elysia';
import type { Deps } from './deps';
import { errorHandler } from './http/error-handler';
import { bodyLimit } from './http/body-limit';
import { jsonDepthLimit } from './http/json-depth-limit';
import { privateApiCors } from './http/private-cors';
import { docsModule } from './modules/docs';
import { healthModule, type Readiness } from './modules/health';
import { metricsModule } from './modules/metrics';
import { requestLog } from './http/request-log';
import { projectsModule } from './modules/projects';
import { usersModule } from './modules/users';
import { personalApiKeysModule } from './modules/personal-api-keys';
import { captureModule } from './modules/capture';
import { invitesModule } from './modules/invites';
import { cohortsModule } from './modules/cohorts';
import { eventDefinitionsModule } from './modules/event-definitions';
import { propertyDefinitionsModule } from './modules/property-definitions';
import { featureFlagsModule } from './modules/feature-flags';
import { decideModule } from './modules/decide';
import { staticAssetsModule } from './modules/static-assets';
import { eventsModule } from './modules/events';
import { queryModule } from './modules/query';
import { personsModule } from './modules/persons';

/** Every feature module, composed; no logic of its own. */
export function createApp(deps: Deps, readiness: Readiness = { accepting: true }) {
  return new Elysia({ name: 'app' })
    .use(errorHandler(deps.logger))
    // First of the request hooks: its headers are on every answer of the private API, refusals included.
    .use(privateApiCors(deps.config.API_CORS_ORIGINS))
    .use(requestLog(deps.logger, deps.metrics))
    .use(bodyLimit(deps.config.MAX_BODY_BYTES))
    .use(jsonDepthLimit())
    .use(docsModule(deps.version))
    .use(healthModule(deps, readiness))
    .use(metricsModule(deps))
    .use(projectsModule(deps))
    .use(usersModule(deps))
    .use(personalApiKeysModule(deps))
    .use(captureModule(deps))
    .use(invitesModule(deps))
    .use(cohortsModule(deps))
    .use(eventDefinitionsModule(deps))
    .use(propertyDefinitionsModule(deps))
    .use(featureFlagsModule(deps))
    .use(decideModule(deps))
    .use(eventsModule(deps))
    .use(queryModule(deps))
    .use(personsModule(deps))
    .use(staticAssetsModule());
}

export type App = ReturnType<typeof createApp>;
