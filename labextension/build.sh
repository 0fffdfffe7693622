#!/usr/bin/env bash
# Build the JupyterLab 4 extension (TypeScript + Rspack) into acp_notebook/labextension/, and the
# nbextension (the same views as one AMD module, esbuild) into acp_notebook/nbextension/.
#
#   bash labextension/build.sh            # install node deps from yarn.lock, build (prod)
#   bash labextension/build.sh --develop  # same, then link the build into this Python env's
#                                         # share/jupyter/labextensions/acp-notebook, and copy
#                                         # the nbextension (acp_notebook/nbextension) and its
#                                         # config where the classic notebook looks
#
# Needs node >= 18 and the Python package jupyter-builder (it provides `jlpm` and the
# `jupyter-builder` command; it comes with jupyterlab>=4.6).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cd "$here"

if ! command -v jlpm >/dev/null 2>&1; then
    echo "jlpm not found: pip install 'jupyter-builder>=1.2,<2' (or jupyterlab>=4.6)" >&2
    exit 1
fi

start=$(date +%s)
jlpm install --immutable
jlpm build:prod
echo "labextension built in $(( $(date +%s) - start )) s -> $root/acp_notebook/labextension"

if [[ "${1:-}" == "--develop" ]]; then
    prefix="$(python -c 'import sys; print(sys.prefix)')"
    dest="$prefix/share/jupyter/labextensions/acp-notebook"
    mkdir -p "$(dirname "$dest")"
    rm -rf "$dest"
    ln -s "$root/acp_notebook/labextension" "$dest"
    echo "linked $dest -> $root/acp_notebook/labextension"
    # copied, not linked: the server refuses a file whose real path leaves its nbextensions dir
    nbdest="$prefix/share/jupyter/nbextensions/acp-notebook"
    rm -rf "$nbdest"
    mkdir -p "$(dirname "$nbdest")" "$prefix/etc/jupyter/nbconfig/notebook.d"
    cp -r "$root/acp_notebook/nbextension" "$nbdest"
    cp "$root/jupyter-config/nbconfig/notebook.d/acp-notebook.json" \
        "$prefix/etc/jupyter/nbconfig/notebook.d/"
    echo "copied the nbextension to $nbdest"
fi
