export const TEMPLATE_DATABASE = 'wfapp_template';
