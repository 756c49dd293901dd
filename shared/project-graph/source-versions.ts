// Source version ids (a uuid per source row a fact can quote; migration 0019) are SQL expressions the
// graph's queries embed: they live with those queries in ./repository.ts. Re-exported here, the name
// the migrations and the bench know them by.
export { currentSourceVersion, deploymentVersion, documentVersion, fileVersion } from './repository.js';
