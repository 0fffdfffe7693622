/**
 * Widget module name and version. Keep MODULE_VERSION equal to package.json's version;
 * the Python side asks for `^0.1.0` (acp_notebook/_widgets/_version.py).
 */
export const MODULE_NAME = 'acp-notebook';
export const MODULE_VERSION = '0.1.0';

/** The side panel model's own attributes (the labextension's and the nbextension's model). */
export function panelModelDefaults(): Record<string, unknown> {
  return {
    _model_name: 'AgentPanelModel',
    _model_module: MODULE_NAME,
    _model_module_version: MODULE_VERSION,
    _view_name: 'AgentPanelView',
    _view_module: MODULE_NAME,
    _view_module_version: MODULE_VERSION,
    children: [],
    title: 'ACP agents',
    pending_count: 0,
    _show_requests: 0
  };
}
