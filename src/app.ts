import { Elysia } from 'elysia';
import type { Deps } from './deps';
import { errorHandler } from './http/error-handler';
import { docsModule } from './modules/docs';
import { healthModule, type Readiness } from './modules/health';
import { projectsModule } from './modules/projects';
import { usersModule } from './modules/users';

/** Every feature module, composed; no logic of its own. */
export function createApp(deps: Deps, readiness: Readiness = { accepting: true }) {
  return new Elysia({ name: 'app' })
    .use(errorHandler(deps.logger))
    .use(docsModule(deps.version))
    .use(healthModule(readiness))
    .use(projectsModule(deps))
    .use(usersModule(deps));
}

export type App = ReturnType<typeof createApp>;
