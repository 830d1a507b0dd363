#!/usr/bin/env bash
# Regenerate the Codex app-server protocol's JSON Schema kept here as test data.
# `codex app-server generate-json-schema` writes one bundle holding every type plus the
# same types split into single files; only the bundle is kept (the split files repeat it).
# CODEX_CLI_VERSION picks another Codex CLI (see bin/install-codex-cli).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
codex="$("$here/../../../bin/install-codex-cli")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$codex" app-server generate-json-schema --out "$out" >/dev/null
cp "$out/codex_app_server_protocol.schemas.json" "$here/"
"$codex" --version > "$here/VERSION"
echo "schema of $(cat "$here/VERSION") written to $here"
