/**
 * Widget module name and version. Keep MODULE_VERSION equal to package.json's version;
 * the Python side asks for `^0.1.0` (acp_notebook/_widgets/_version.py).
 */
export const MODULE_NAME = 'acp-notebook';
export const MODULE_VERSION = '0.1.0';
