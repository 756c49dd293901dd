import type { Migration } from 'kysely';
import * as foundation from './2026_11_21_0001_foundation.js';
import * as credentials from './2026_11_21_0002_credentials.js';
import * as appRuns from './2026_11_21_0003_app_runs.js';
import * as storage from './2026_11_21_0004_storage.js';
import * as runIdempotency from './2026_11_21_0005_run_idempotency.js';
import * as triggers from './2026_11_21_0006_triggers.js';
import * as releases from './2026_11_21_0007_releases.js';
import * as crossTeam from './2026_11_21_0008_cross_team.js';
import * as providerSettings from './2026_11_21_0009_provider_settings.js';
import * as runPayloads from './2026_11_21_0010_run_payloads.js';
import * as deploymentNotify from './2026_11_21_0011_deployment_notify.js';
import * as workflowStarts from './2026_11_24_0012_workflow_starts.js';
import * as hardwareSales from './2026_11_24_0013_hardware_sales.js';
import * as hardwarePay from './2026_11_24_0014_hardware_pay.js';
import * as publicConfig from './2026_11_24_0015_public_config.js';
import * as billingPayments from './2026_11_24_0016_billing_payments.js';
import * as connectors from './2026_11_24_0017_connectors.js';
import * as connectorPolling from './2026_11_24_0018_connector_polling.js';
import * as projectGraph from './2026_11_24_0019_project_graph.js';
import * as graphEmbeddings from './2026_11_24_0020_graph_embeddings.js';
import * as accessRule from './2026_11_27_0021_access_rule.js';
import * as billingRelations from './2026_11_27_0022_billing_relations.js';
import * as dataApiRelations from './2026_11_27_0023_data_api_relations.js';
import * as dataApiSecurity from './2026_11_27_0024_data_api_security.js';
import * as oauthAppLifecycle from './2026_11_27_0025_oauth_app_lifecycle.js';
import * as agentManagement from './2026_11_27_0026_agent_management.js';
import * as storageBanners from './2026_11_27_0027_storage_banners.js';
import * as realtimePublication from './2026_11_27_0028_realtime_publication.js';
import * as oauthClientRemoval from './2026_11_27_0029_oauth_client_removal.js';
import * as runCallbacks from './2026_11_27_0030_run_callbacks.js';
import * as runWaits from './2026_11_27_0031_run_waits.js';
import * as runEventsByRun from './2026_11_27_0032_run_events_by_run.js';
import * as runApprovalsDataApi from './2026_11_27_0033_run_approvals_data_api.js';

/**
 * Migrations in order. A static list (not a folder scan) so the same code runs from TypeScript
 * sources, the compiled build and bundles alike. Names sort in the order they were written.
 */
export const migrations: Record<string, Migration> = {
  '2026_11_21_0001_foundation': foundation,
  '2026_11_21_0002_credentials': credentials,
  '2026_11_21_0003_app_runs': appRuns,
  '2026_11_21_0004_storage': storage,
  '2026_11_21_0005_run_idempotency': runIdempotency,
  '2026_11_21_0006_triggers': triggers,
  '2026_11_21_0007_releases': releases,
  '2026_11_21_0008_cross_team': crossTeam,
  '2026_11_21_0009_provider_settings': providerSettings,
  '2026_11_21_0010_run_payloads': runPayloads,
  '2026_11_21_0011_deployment_notify': deploymentNotify,
  '2026_11_24_0012_workflow_starts': workflowStarts,
  '2026_11_24_0013_hardware_sales': hardwareSales,
  '2026_11_24_0014_hardware_pay': hardwarePay,
  '2026_11_24_0015_public_config': publicConfig,
  '2026_11_24_0016_billing_payments': billingPayments,
  '2026_11_24_0017_connectors': connectors,
  '2026_11_24_0018_connector_polling': connectorPolling,
  '2026_11_24_0019_project_graph': projectGraph,
  '2026_11_24_0020_graph_embeddings': graphEmbeddings,
  '2026_11_27_0021_access_rule': accessRule,
  '2026_11_27_0022_billing_relations': billingRelations,
  '2026_11_27_0023_data_api_relations': dataApiRelations,
  '2026_11_27_0024_data_api_security': dataApiSecurity,
  '2026_11_27_0025_oauth_app_lifecycle': oauthAppLifecycle,
  '2026_11_27_0026_agent_management': agentManagement,
  '2026_11_27_0027_storage_banners': storageBanners,
  '2026_11_27_0028_realtime_publication': realtimePublication,
  '2026_11_27_0029_oauth_client_removal': oauthClientRemoval,
  '2026_11_27_0030_run_callbacks': runCallbacks,
  '2026_11_27_0031_run_waits': runWaits,
  '2026_11_27_0032_run_events_by_run': runEventsByRun,
  '2026_11_27_0033_run_approvals_data_api': runApprovalsDataApi,
};
