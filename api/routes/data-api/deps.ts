import type { DataApiIdentityResolver } from '../../../shared/data-api/identity.js';

/** What the data API's plugins (REST, storage, realtime) share beside AppDeps: one identity resolver. */
export interface DataApiDeps {
  dataApiIdentity: DataApiIdentityResolver;
}
