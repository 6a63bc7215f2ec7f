import type { Config } from './config';
import type { CreatedAccount, Storage } from './storage';

/**
 * First start: on an empty database make an organization, a project, a user and a personal API
 * key, using the BOOTSTRAP_* values when set (so infrastructure-as-code and tests know the keys).
 * Returns what was made, or null when the database already had an organization.
 */
export async function bootstrap(storage: Storage, config: Config): Promise<CreatedAccount | null> {
  if (!(await storage.management.isEmpty())) return null;
  return storage.management.createAccount({
    email: config.BOOTSTRAP_EMAIL ?? 'admin@localhost',
    organizationName: config.BOOTSTRAP_ORGANIZATION_NAME,
    personalApiKey: config.BOOTSTRAP_PERSONAL_API_KEY,
    projectApiKey: config.BOOTSTRAP_PROJECT_API_KEY,
  });
}

export function describeAccount(a: CreatedAccount) {
  return {
    organization_id: a.organization.id,
    organization_name: a.organization.name,
    project_id: a.project.id,
    project_api_key: a.project.apiToken,
    email: a.user.email,
    user_id: a.user.id,
    personal_api_key_id: a.personalApiKey.id,
    personal_api_key: a.personalApiKey.value,
  };
}
