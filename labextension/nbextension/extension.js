// The classic notebook loads this file at start-up (etc/jupyter/nbconfig/notebook.d/
// acp-notebook.json). VS Code reads the require.config call below as text to find the widget
// module of a local kernel. Both then load index.js when a widget of module "acp-notebook"
// first appears.
define(function () {
  'use strict';
  window.require.config({
    map: {
      "*": {
        "acp-notebook": "nbextensions/acp-notebook/index"
      }
    }
  });
  return { load_ipython_extension: function () {} };
});
